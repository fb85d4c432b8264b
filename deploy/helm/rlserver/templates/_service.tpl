{{/*
The ports clients use, on the client Service and the headless one.
*/}}
{{- define "rlserver.servicePorts" -}}
{{- if or (not .Values.tls.enabled) .Values.tls.plainPort }}
- name: redis
  port: {{ int .Values.ports.client }}
  targetPort: redis
  protocol: TCP
{{- end }}
{{- if .Values.tls.enabled }}
- name: redis-tls
  port: {{ int .Values.tls.port }}
  targetPort: redis-tls
  protocol: TCP
{{- end }}
{{- if .Values.rls.enabled }}
- name: grpc
  port: {{ int .Values.rls.port }}
  targetPort: grpc
  protocol: TCP
{{- end }}
{{- end }}
