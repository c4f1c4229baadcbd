{{- define "c.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "c.fullname" -}}
{{- printf "%s-%s" .Release.Name (include "c.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "c.labels" -}}
app.kubernetes.io/name: {{ include "c.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "c.dict" -}}
{{ .a }}/{{ .b }}
{{- end }}
