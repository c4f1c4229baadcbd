//! `values.schema.json` validation: the chart's (and each subchart's) coalesced values are
//! checked against its JSON Schema before rendering, as `helm template` does, and violations
//! are reported per chart and per field.

use serde_json::Value;

use super::chart::Chart;
use super::values::Values;

message_error! {
    /// Values that break the chart's `values.schema.json`, listed as Helm lists them.
    SchemaError
}

/// Helm's `ValidateAgainstSchema`: Err carries the report (one `- field: reason` line per
/// violation, grouped under the chart's name).
pub fn validate(chart: &Chart, values: &Values) -> Result<(), SchemaError> {
    let mut sb = String::new();
    validate_into(chart, values, &mut sb)?;
    if sb.is_empty() {
        Ok(())
    } else {
        Err(SchemaError(sb))
    }
}

fn validate_into(chart: &Chart, values: &Values, sb: &mut String) -> Result<(), SchemaError> {
    if let Some(schema) = &chart.schema {
        let report = validate_single(values, schema)
            .map_err(|e| format!("{}: values.schema.json: {e}", chart.name()))?;
        if !report.is_empty() {
            sb.push_str(&format!("{}:\n", chart.name()));
            sb.push_str(&report);
        }
    }
    for sub in &chart.dependencies {
        let sv = match values.get(sub.name()) {
            Some(Value::Object(m)) => m.clone(),
            _ => Values::new(),
        };
        validate_into(sub, &sv, sb)?;
    }
    Ok(())
}

/// Values go through YAML and back to JSON in Helm, so whole floats become integers.
fn jsonify(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                Value::from(f as i64)
            } else {
                v.clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(jsonify).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), jsonify(v))).collect()),
        other => other.clone(),
    }
}

fn validate_single(values: &Values, schema: &[u8]) -> Result<String, SchemaError> {
    let schema: Value = serde_json::from_slice(schema).map_err(|e| e.to_string())?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    let instance = jsonify(&Value::Object(values.clone()));
    let mut out = String::new();
    for err in validator.iter_errors(&instance) {
        let ptr = err.instance_path.to_string();
        let field = if ptr.is_empty() {
            "(root)".to_string()
        } else {
            ptr.trim_start_matches('/').replace('/', ".")
        };
        out.push_str(&format!("- {field}: {err}\n"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_field_and_chart() {
        let chart = Chart {
            metadata: super::super::chart::Metadata {
                name: "c".into(),
                ..Default::default()
            },
            schema: Some(
                br#"{"type":"object","properties":{"replicas":{"type":"integer"}},"required":["image"]}"#
                    .to_vec(),
            ),
            ..Default::default()
        };
        let Value::Object(ok) = json!({"replicas": 1.0, "image": "x"}) else {
            unreachable!()
        };
        validate(&chart, &ok).unwrap();
        let Value::Object(bad) = json!({"replicas": "two"}) else {
            unreachable!()
        };
        let e = validate(&chart, &bad).unwrap_err();
        assert!(e.0.starts_with("c:\n"), "{e}");
        assert!(e.0.contains("- replicas:"), "{e}");
        assert!(e.0.contains("(root)"), "{e}");
    }
}
