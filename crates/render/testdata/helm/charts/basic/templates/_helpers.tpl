{{/* A comment that renders nothing. */}}
{{- define "basic.name" -}}
{{ .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "basic.fullname" -}}
{{- printf "%s-%s" .Release.Name (include "basic.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "basic.labels" -}}
app.kubernetes.io/name: {{ include "basic.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "basic.selector" . }}
{{- end -}}

{{- define "basic.selector" -}}
app: {{ include "basic.fullname" . }}
{{- end -}}
