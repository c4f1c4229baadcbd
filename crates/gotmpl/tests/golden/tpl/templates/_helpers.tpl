{{- define "helper" -}}HELPER {{ .Values.x }}{{- end }}
