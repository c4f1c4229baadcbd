//! Status conditions as wrangler's genericcondition: timestamps move only when the condition's
//! status, reason or message changes, so recomputing an unchanged status yields an equal object
//! (and nothing is written).

use fleet_api::Condition;

/// Now, RFC 3339 with seconds (Kubernetes `metav1.Time`).
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Sets condition `type_` to `status` with `reason`/`message`, keeping timestamps when unchanged.
pub fn set(conds: &mut Vec<Condition>, type_: &str, status: bool, reason: &str, message: &str) {
    let status = if status { "True" } else { "False" };
    if let Some(c) = conds.iter_mut().find(|c| c.type_ == type_) {
        if c.status == status && c.reason == reason && c.message == message {
            return;
        }
        let t = now();
        if c.status != status {
            c.last_transition_time = t.clone();
        }
        c.status = status.into();
        c.reason = reason.into();
        c.message = message.into();
        c.last_update_time = t;
        return;
    }
    let t = now();
    conds.push(Condition {
        type_: type_.into(),
        status: status.into(),
        last_update_time: t.clone(),
        last_transition_time: t,
        reason: reason.into(),
        message: message.into(),
    });
}

/// Finds a condition.
pub fn get<'a>(conds: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conds.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_condition_keeps_timestamps() {
        let mut c = Vec::new();
        set(&mut c, "Ready", true, "", "");
        let before = c.clone();
        set(&mut c, "Ready", true, "", "");
        assert_eq!(c, before);
        set(&mut c, "Ready", false, "Error", "boom");
        assert_eq!(c[0].status, "False");
        assert_eq!(c[0].message, "boom");
        assert_eq!(c.len(), 1);
    }
}
