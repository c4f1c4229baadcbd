{{- define "fill" -}}
{{- $_ := set . "filled" "yes" -}}
{{- end -}}
