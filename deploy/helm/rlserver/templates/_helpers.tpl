{{/*
Names and labels. The StatefulSet, its pods' prefix and the node ids all come from fullname:
pod <fullname>-N is node <fullname>-N, whose ordinal N is what --desired-nodes-statefulset
compares with .spec.replicas.
*/}}

{{- define "rlserver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The fullname leaves room for "-headless" and a pod's ordinal within the 63 characters of a DNS
label: a pod's name is the first label of its address.
*/}}
{{- define "rlserver.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rlserver.headless" -}}
{{ include "rlserver.fullname" . }}-headless
{{- end }}

{{- define "rlserver.join" -}}
{{ include "rlserver.fullname" . }}-join
{{- end }}

{{- define "rlserver.members" -}}
{{ include "rlserver.fullname" . }}-members
{{- end }}

{{- define "rlserver.rlsConfigMap" -}}
{{- .Values.rls.configMap | default (printf "%s-rls" (include "rlserver.fullname" .)) }}
{{- end }}

{{/*
The Secret of the xDS client's certificate and CA, when the pods take the limits over xDS with
TLS: "" otherwise.
*/}}
{{- define "rlserver.xdsSecret" -}}
{{- if and .Values.rls.enabled .Values.rls.xds.server .Values.rls.xds.tls.enabled }}{{ .Values.rls.xds.tls.secret }}{{ end }}
{{- end }}

{{- define "rlserver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rlserver.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rlserver.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rlserver.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The port every node's address names, which cluster clients are sent to: the plain one, or the
TLS one when TLS is the only one (rlserver checks that a node's entry names its client port).
*/}}
{{- define "rlserver.addressPort" -}}
{{- if and .Values.tls.enabled (not .Values.tls.plainPort) }}{{ int .Values.tls.port }}{{ else }}{{ int .Values.ports.client }}{{ end }}
{{- end }}

{{/*
The --cluster list for the current replicas: id@address:port@busport for every pod, by its
stable DNS name under the headless Service.
*/}}
{{- define "rlserver.clusterList" -}}
{{- $fullname := include "rlserver.fullname" . }}
{{- $headless := include "rlserver.headless" . }}
{{- $port := include "rlserver.addressPort" . }}
{{- $members := list }}
{{- range $i := until (int .Values.replicas) }}
{{- $pod := printf "%s-%d" $fullname $i }}
{{- $members = append $members (printf "%s@%s.%s.%s.svc:%s@%d" $pod $pod $headless $.Release.Namespace $port (int $.Values.ports.bus)) }}
{{- end }}
{{- join "," $members }}
{{- end }}

{{/*
Checks of values that the schema cannot express.
*/}}
{{- define "rlserver.validate" -}}
{{- if and .Values.auth.passwordSecret .Values.auth.aclfileSecret }}
{{- fail "auth.passwordSecret and auth.aclfileSecret exclude each other: give the default user its password in the aclfile" }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secret) }}
{{- fail "tls.enabled needs tls.secret: a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt" }}
{{- end }}
{{- if and .Values.tls.cluster (not .Values.tls.enabled) }}
{{- fail "tls.cluster needs tls.enabled and tls.secret: the bus uses the same certificate" }}
{{- end }}
{{- $xds := .Values.rls.xds }}
{{- if and .Values.rls.enabled (not .Values.rls.configMap) (not .Values.rls.config) (not $xds.server) }}
{{- fail "rls.enabled needs its limits: rls.config, rls.configMap, or rls.xds.server" }}
{{- end }}
{{- if $xds.server }}
{{- if not .Values.rls.enabled }}
{{- fail "rls.xds.server needs rls.enabled: true, whose gRPC port serves the limits the control plane sends" }}
{{- end }}
{{- if or .Values.rls.config .Values.rls.configMap }}
{{- fail "rls.xds.server and rls.config / rls.configMap exclude each other: the limits come from the control plane or from files, not both (--rls-xds-server excludes --rls-config)" }}
{{- end }}
{{- if and $xds.tls.enabled (not $xds.tls.secret) }}
{{- fail "rls.xds.tls.enabled needs rls.xds.tls.secret: the CA the control plane's certificate chains to (the image holds none), and the client certificate it asks for (Envoy Gateway's Secret: envoy-rate-limit)" }}
{{- end }}
{{- if and $xds.tls.enabled (ne (empty $xds.tls.certFile) (empty $xds.tls.keyFile)) }}
{{- fail "rls.xds.tls.certFile and rls.xds.tls.keyFile go together: a client certificate and its key, or neither" }}
{{- end }}
{{- if and (not $xds.tls.enabled) $xds.tls.secret }}
{{- fail "rls.xds.tls.secret needs rls.xds.tls.enabled: without TLS its certificates would not be used" }}
{{- end }}
{{- end }}
{{- $ports := list (int .Values.ports.client) (int .Values.ports.bus) (int .Values.ports.metrics) }}
{{- if .Values.tls.enabled }}{{ $ports = append $ports (int .Values.tls.port) }}{{ end }}
{{- if .Values.rls.enabled }}{{ $ports = append $ports (int .Values.rls.port) }}{{ end }}
{{- if ne (len $ports) (len (uniq $ports)) }}
{{- fail (printf "ports must differ from each other: %v" $ports) }}
{{- end }}
{{- end }}
