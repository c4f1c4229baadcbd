{{ define "req" }}{{ required "inner required" .Values.q }}{{ end }}
