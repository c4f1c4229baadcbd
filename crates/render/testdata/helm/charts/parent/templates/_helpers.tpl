{{- define "common.name" -}}parent-defined{{- end -}}
