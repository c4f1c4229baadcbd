{{- define "common.name" -}}child-defined{{- end -}}
{{- define "child.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
