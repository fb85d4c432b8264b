{{/*
rlserver's flags. Every pod gets the same ones: what differs between pods comes from the
environment (RLSERVER_NODE_ID from the pod's name) or from $(VAR), which the kubelet expands
in args. Nothing here depends on replicas, so that scaling restarts no pod: the member list
comes from the members ConfigMap, as RLSERVER_CLUSTER.
*/}}
{{- define "rlserver.args" -}}
{{- $headless := include "rlserver.headless" . }}
{{- $addressPort := include "rlserver.addressPort" . }}
{{- $bus := int .Values.ports.bus }}
- --bind=0.0.0.0
{{- if and .Values.tls.enabled (not .Values.tls.plainPort) }}
- --port=0
{{- else }}
- --port={{ int .Values.ports.client }}
{{- end }}
- --data-dir=/data/rlserver
- --shards={{ int .Values.shards }}
{{- /*
A node is reached at its stable DNS name, never an IP: a pod that restarts elsewhere keeps its
name, and peers dial names at every connection. It listens on every address of the pod, since
its own name may not resolve yet when it starts.
*/}}
- --announce=$(POD_NAME).{{ $headless }}.$(POD_NAMESPACE).svc:{{ $addressPort }}@{{ $bus }}
- --bus-listen=0.0.0.0:{{ $bus }}
{{- /*
A node that is not one of the cluster's first members (a scale-up) joins through the join
Service: a ClusterIP Service of the bus port of the ready pods, so that each attempt reaches a
live member, whichever ordinals are down.
*/}}
- --join={{ include "rlserver.join" . }}.$(POD_NAMESPACE).svc:{{ $addressPort }}@{{ $bus }}
- --metrics-port={{ int .Values.ports.metrics }}
{{- if not .Values.metrics.statusPage }}
- --status-page=no
{{- end }}
{{- if .Values.fleet.autoRebalance }}
- --auto-rebalance
{{- end }}
- --rejoin-if-forgotten
- --desired-nodes-statefulset={{ include "rlserver.fullname" . }}
- --leave-timeout={{ int .Values.fleet.leaveTimeoutSeconds }}s
- --protected-mode={{ ternary "yes" "no" .Values.auth.protectedMode }}
{{- if .Values.auth.aclfileSecret }}
- --aclfile=/etc/rlserver/acl/users.acl
{{- end }}
{{- if .Values.tls.enabled }}
- --tls-port={{ int .Values.tls.port }}
- --tls-cert-file=/etc/rlserver/tls/tls.crt
- --tls-key-file=/etc/rlserver/tls/tls.key
- --tls-auth-clients={{ .Values.tls.authClients }}
{{- if or (ne .Values.tls.authClients "no") .Values.tls.cluster }}
- --tls-ca-cert-file=/etc/rlserver/tls/ca.crt
{{- end }}
{{- if .Values.tls.cluster }}
- --tls-cluster=yes
{{- end }}
{{- end }}
{{- if .Values.rls.enabled }}
- --grpc-port={{ int .Values.rls.port }}
{{- with .Values.rls.xds }}
{{- if .server }}
{{- /*
The limits from the control plane, each pod its own subscriber under the same node id: every
pod gets every config, as each decides for any caller.
*/}}
- --rls-xds-server={{ .server }}
- --rls-xds-node-id={{ .nodeId }}
{{- if .tls.enabled }}
- --rls-xds-tls=yes
{{- with .tls.certFile }}
- --rls-xds-tls-cert-file=/etc/rlserver/rls-xds/{{ . }}
{{- end }}
{{- with .tls.keyFile }}
- --rls-xds-tls-key-file=/etc/rlserver/rls-xds/{{ . }}
{{- end }}
{{- with .tls.caFile }}
- --rls-xds-tls-ca-cert-file=/etc/rlserver/rls-xds/{{ . }}
{{- end }}
{{- with .tls.serverName }}
- --rls-xds-tls-server-name={{ . }}
{{- end }}
{{- end }}
{{- else }}
- --rls-config=/etc/rlserver/rls
{{- end }}
{{- end }}
{{- if .Values.rls.responseHeaders }}
- --rls-response-headers=yes
{{- end }}
{{- end }}
{{- with .Values.extraArgs }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The environment: the pod's name and namespace for $(VAR) in args, the node's id, the member
list from the members ConfigMap (read when the container starts, so the pods that a scale-up
adds see the longer list and the others are not restarted), the password from its Secret.
*/}}
{{- define "rlserver.env" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: RLSERVER_NODE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: RLSERVER_CLUSTER
  valueFrom:
    configMapKeyRef:
      name: {{ include "rlserver.members" . }}
      key: cluster
{{- if .Values.auth.passwordSecret }}
- name: RLSERVER_REQUIREPASS
  valueFrom:
    secretKeyRef:
      name: {{ .Values.auth.passwordSecret }}
      key: {{ .Values.auth.passwordKey }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
