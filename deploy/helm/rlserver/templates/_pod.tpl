{{/*
The parts of the pod template beside the flags: ports, probes, volumes, affinity.
*/}}

{{- define "rlserver.containerPorts" -}}
{{- if or (not .Values.tls.enabled) .Values.tls.plainPort }}
- name: redis
  containerPort: {{ int .Values.ports.client }}
  protocol: TCP
{{- end }}
{{- if .Values.tls.enabled }}
- name: redis-tls
  containerPort: {{ int .Values.tls.port }}
  protocol: TCP
{{- end }}
- name: bus
  containerPort: {{ int .Values.ports.bus }}
  protocol: TCP
- name: metrics
  containerPort: {{ int .Values.ports.metrics }}
  protocol: TCP
{{- if .Values.rls.enabled }}
- name: grpc
  containerPort: {{ int .Values.rls.port }}
  protocol: TCP
{{- end }}
{{- end }}

{{/*
Probes, all on the metrics port, which serves plain HTTP whatever TLS the client port has.
/healthz answers while the process runs and says nothing of the shards, so neither an election
nor a long snapshot gets a pod restarted; the metrics port serves once the node has opened its
replicas (snapshots restored) or joined, which the startup probe waits for. /readyz is 200 once
the node's replicas have caught up and every shard's leader is known: a rolling update waits for
it before it restarts the next pod.
*/}}
{{- define "rlserver.probes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: {{ max 1 (div (add (int .Values.probes.startupSeconds) 9) 10) }}
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: {{ max 1 (div (add (int .Values.probes.livenessSeconds) 9) 10) }}
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: {{ int .Values.probes.readinessPeriodSeconds }}
  timeoutSeconds: 3
  failureThreshold: 2
{{- end }}

{{/*
/data holds the data directory in a subdirectory, /data/rlserver: a fresh volume's root may
hold lost+found, and rlserver wipes its whole data directory when the cluster has forgotten it.
*/}}
{{- define "rlserver.volumeMounts" -}}
- name: data
  mountPath: /data
{{- if .Values.auth.aclfileSecret }}
- name: acl
  mountPath: /etc/rlserver/acl
  readOnly: true
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/rlserver/tls
  readOnly: true
{{- end }}
{{- if and .Values.rls.enabled (not .Values.rls.xds.server) }}
{{- /* Mounted whole (no subPath), so that the kubelet updates the files and rlserver reloads them. */}}
- name: rls
  mountPath: /etc/rlserver/rls
  readOnly: true
{{- end }}
{{- if include "rlserver.xdsSecret" . }}
- name: rls-xds
  mountPath: /etc/rlserver/rls-xds
  readOnly: true
{{- end }}
{{- end }}

{{- define "rlserver.volumes" -}}
{{- if not .Values.persistence.enabled }}
- name: data
  emptyDir: {}
{{- end }}
{{- if .Values.auth.aclfileSecret }}
- name: acl
  secret:
    secretName: {{ .Values.auth.aclfileSecret }}
    defaultMode: 0440
    items:
      - key: {{ .Values.auth.aclfileKey }}
        path: users.acl
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .Values.tls.secret }}
    defaultMode: 0440
{{- end }}
{{- if and .Values.rls.enabled (not .Values.rls.xds.server) }}
- name: rls
  configMap:
    name: {{ include "rlserver.rlsConfigMap" . }}
{{- end }}
{{- with include "rlserver.xdsSecret" . }}
- name: rls-xds
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{/*
Pods of a release on distinct nodes: a node that fails takes one replica of each shard, not a
majority.
*/}}
{{- define "rlserver.affinity" -}}
{{- if .Values.affinity }}
affinity:
  {{- toYaml .Values.affinity | nindent 2 }}
{{- else if eq .Values.podAntiAffinity "hard" }}
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "rlserver.selectorLabels" . | nindent 12 }}
{{- else if eq .Values.podAntiAffinity "soft" }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "rlserver.selectorLabels" . | nindent 14 }}
{{- end }}
{{- end }}
