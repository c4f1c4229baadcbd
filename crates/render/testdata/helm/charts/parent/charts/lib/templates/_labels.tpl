{{- define "lib.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
lib-chart: {{ .Chart.Name }}
{{- end -}}
