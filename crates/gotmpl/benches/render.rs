//! Render throughput of the template engine (harness = false; prints medians).
//! Run: cargo bench -p gotmpl --bench render

use std::hint::black_box;
use std::time::{Duration, Instant};

use gotmpl::{MissingKey, Templates, Value};

const HELPERS: &str = r#"
{{- define "app.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "app.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- define "app.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "app.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}
  labels:
    {{- include "app.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          env:
          {{- range $k, $v := .Values.env }}
            - name: {{ $k | upper }}
              value: {{ $v | quote }}
          {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
          {{- end }}
"#;

const VALUES: &str = r#"
replicaCount: 3
image: {repository: nginx, tag: ""}
env: {a: "1", b: two, c: "three", d: "4", e: five, f: six, g: seven, h: eight}
resources:
  limits: {cpu: 500m, memory: 128Mi}
  requests: {cpu: 250m, memory: 64Mi}
nodeSelector: {disktype: ssd, zone: a}
"#;

fn data() -> Value {
    let values = gotmpl::yaml::from_yaml(VALUES).expect("values");
    gotmpl::map_of([
        ("Values".into(), values),
        (
            "Chart".into(),
            gotmpl::map_of([
                ("Name".into(), Value::str("app")),
                ("Version".into(), Value::str("1.2.3")),
                ("AppVersion".into(), Value::str("1.25")),
            ]),
        ),
        (
            "Release".into(),
            gotmpl::map_of([("Name".into(), Value::str("rel"))]),
        ),
    ])
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench(name: &str, iters: usize, mut f: impl FnMut()) {
    for _ in 0..iters / 10 + 1 {
        f();
    }
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    let m = median(samples);
    println!(
        "{name:<40} median {:>10.2} µs  ({:.0}/s)",
        m.as_secs_f64() * 1e6,
        1.0 / m.as_secs_f64()
    );
}

fn main() {
    let d = data();
    let mut set = Templates::new();
    set.missing_key(MissingKey::Zero);
    set.parse("app/templates/_helpers.tpl", HELPERS)
        .expect("helpers");
    set.parse("app/templates/deployment.yaml", DEPLOYMENT)
        .expect("deployment");
    let out = set
        .execute("app/templates/deployment.yaml", &d)
        .expect("render");
    assert!(out.contains("name: rel-app"));

    bench("parse helpers+deployment", 2000, || {
        let mut t = Templates::new();
        t.parse("h", black_box(HELPERS)).expect("parse");
        t.parse("d", black_box(DEPLOYMENT)).expect("parse");
        black_box(t);
    });
    bench("execute deployment (include/toYaml)", 2000, || {
        black_box(
            set.execute("app/templates/deployment.yaml", black_box(&d))
                .expect("exec"),
        );
    });
    let big: Value = gotmpl::map_of((0..200).map(|i| {
        (
            format!("key{i}"),
            gotmpl::map_of([
                ("name".into(), Value::from(format!("item-{i}"))),
                ("list".into(), Value::from(vec![Value::Float(i as f64), Value::str("yes"), Value::Nil])),
                ("text".into(), Value::str("a long string value that will need to be folded because it is longer than eighty columns")),
            ]),
        )
    }));
    bench("toYaml 200-entry map", 500, || {
        black_box(gotmpl::yaml::to_yaml(black_box(&big)));
    });
    let yaml_text = gotmpl::yaml::to_yaml(&big);
    bench("fromYaml 200-entry map", 500, || {
        black_box(gotmpl::yaml::from_yaml(black_box(&yaml_text)).expect("yaml"));
    });
}
