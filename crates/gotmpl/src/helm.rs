//! Helm's post-processing of template errors (helm.sh/helm/v3/pkg/engine), exposed so the chart
//! renderer reports failures with exactly Helm's wording.

use crate::error::{Error, ErrorKind};

const WARN_START: &str = "HELM_ERR_START";
const WARN_END: &str = "HELM_ERR_END";

/// Helm's warnWrap: `required` wraps its message so the top-level error can be cleaned up.
pub fn warn_wrap(msg: &str) -> String {
    format!("{WARN_START}{msg}{WARN_END}")
}

/// Helm's cleanupParseError: `parse error at (NAME:LINE): message`.
pub fn cleanup_parse_error(filename: &str, err: &Error) -> String {
    let s = err.to_string();
    let tokens: Vec<&str> = s.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({filename}): {s}");
    }
    format!(
        "parse error at ({}): {}",
        tokens[1],
        tokens.last().copied().unwrap_or("")
    )
}

/// Helm's cleanupExecError: `execution error at (NAME:LINE:COL): message` for `required`
/// failures, otherwise Go's message unchanged.
pub fn cleanup_exec_error(filename: &str, err: &Error) -> String {
    let s = err.to_string();
    if err.kind != ErrorKind::Exec {
        return s;
    }
    let tokens: Vec<&str> = s.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({filename}): {s}");
    }
    // Go's regexp `HELM_ERR_START(.*)HELM_ERR_END`: greedy, no newlines.
    for line in tokens[2].split('\n') {
        if let Some(st) = line.find(WARN_START)
            && let Some(en) = line.rfind(WARN_END)
            && en >= st + WARN_START.len()
        {
            return format!(
                "execution error at ({}): {}",
                tokens[1],
                &line[st + WARN_START.len()..en]
            );
        }
    }
    s
}
