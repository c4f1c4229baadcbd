{{ define "outer" }}{{ include "inner" . }}{{ end }}{{ define "inner" }}{{ .Values.x.y }}{{ end }}
