{{- define "errs.inner" -}}
{{- if eq .Values.mode "fail" }}
{{- fail (printf "mode %s is not allowed" .Values.mode) }}
{{- end }}
{{- required "errs.requiredValue is required" .Values.requiredValue }}
{{- end -}}
{{- define "errs.outer" -}}
value: {{ include "errs.inner" . }}
{{- end -}}
