//! sprig's `semver` and `semverCompare` over [`crate::semver`] (Masterminds/semver v3).

use std::cmp::Ordering;
use std::sync::Arc;

use super::super::{Map, Ty, reg, s};
use crate::semver::{Version, semver_compare};
use crate::value::{Object, Value};

/// Templates see a parsed version as Go's `*semver.Version`, with its methods.
impl Object for Version {
    fn field(&self, name: &str) -> Option<Value> {
        self.call(name, &[]).and_then(|r| r.ok())
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let v = match method {
            "Major" => Value::Int(self.major() as i64),
            "Minor" => Value::Int(self.minor() as i64),
            "Patch" => Value::Int(self.patch() as i64),
            "Prerelease" => Value::from(self.prerelease().to_string()),
            "Metadata" => Value::from(self.metadata().to_string()),
            "Original" => Value::from(self.original().to_string()),
            "String" => Value::from(self.to_string()),
            "Compare" | "LessThan" | "GreaterThan" | "Equal" => {
                let other = match args.first() {
                    Some(Value::Object(o)) => match Version::parse(&o.display()) {
                        Ok(v) => v,
                        Err(e) => return Some(Err(e.into())),
                    },
                    _ => {
                        return Some(Err(format!(
                            "wrong number of args for {method}: want 1 got {}",
                            args.len()
                        )));
                    }
                };
                let c = self.compare(&other);
                match method {
                    "Compare" => Value::Int(c as i64),
                    "LessThan" => Value::Bool(c == Ordering::Less),
                    "GreaterThan" => Value::Bool(c == Ordering::Greater),
                    _ => Value::Bool(c == Ordering::Equal),
                }
            }
            _ => return None,
        };
        Some(Ok(v))
    }
    fn display(&self) -> String {
        self.to_string()
    }
    fn type_name(&self) -> String {
        "*semver.Version".into()
    }
}

pub(crate) fn register(m: &mut Map) {
    use Ty::*;
    reg(m, "semver", &[Str], None, |_, a| {
        let v = Version::parse(s(&a[0]))?;
        Ok(Value::Object(Arc::new(v)))
    });
    reg(m, "semverCompare", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(semver_compare(s(&a[0]), s(&a[1]))?))
    });
}
