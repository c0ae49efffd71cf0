{{- define "offerkit.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "offerkit.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "offerkit.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "offerkit.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Environment shared by every process: settings from the ConfigMap and secrets from the Secret, never inline. */}}
{{- define "offerkit.envFrom" -}}
- configMapRef:
    name: {{ include "offerkit.fullname" . }}
- secretRef:
    name: {{ required "secret.name: the Secret with ADMIN_API_KEY, DATABASE_URL, TEMPORAL_ADDRESS, ..." .Values.secret.name }}
{{- end -}}

{{- define "offerkit.tlsEnv" -}}
{{- if .Values.temporalTls.enabled }}
- name: TEMPORAL_TLS_CERT
  value: /etc/offerkit/temporal-tls/tls.crt
- name: TEMPORAL_TLS_KEY
  value: /etc/offerkit/temporal-tls/tls.key
{{- if .Values.temporalTls.ca }}
- name: TEMPORAL_TLS_CA
  value: /etc/offerkit/temporal-tls/ca.crt
{{- end }}
{{- with .Values.temporalTls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "offerkit.tlsMount" -}}
{{- if .Values.temporalTls.enabled }}
- name: temporal-tls
  mountPath: /etc/offerkit/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "offerkit.tlsVolume" -}}
{{- if .Values.temporalTls.enabled }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporalTls.secretName }}
{{- end }}
{{- end -}}
