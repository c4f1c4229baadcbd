//! Errors formatted exactly like Go's text/template errors.

use std::fmt;

/// Whether the error came from parsing or executing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// `template: NAME:LINE: message`
    Parse,
    /// `template: NAME:LINE:COL: executing "NAME" at <node>: message`
    Exec,
    /// Other failures (e.g. `template: no template "x" associated with template "y"`).
    Other,
}

/// A template error. `Display` gives the Go-formatted message; fields locate it.
#[derive(Clone, Debug)]
pub struct Error {
    /// Parse or execution error.
    pub kind: ErrorKind,
    /// Template (parse) name where the error occurred.
    pub name: String,
    /// 1-based line number.
    pub line: usize,
    /// 0-based byte column as Go reports it (exec errors only).
    pub col: Option<usize>,
    /// The bare message without the `template: ...` prefix.
    pub message: String,
    full: String,
}

impl Error {
    pub(crate) fn parse(name: &str, line: usize, msg: String) -> Error {
        Error {
            kind: ErrorKind::Parse,
            name: name.to_string(),
            line,
            col: None,
            full: format!("template: {name}:{line}: {msg}"),
            message: msg,
        }
    }

    pub(crate) fn exec(
        parse_name: &str,
        line: usize,
        col: usize,
        exec_name: &str,
        context: &str,
        msg: String,
    ) -> Error {
        Error {
            kind: ErrorKind::Exec,
            name: parse_name.to_string(),
            line,
            col: Some(col),
            full: format!(
                "template: {parse_name}:{line}:{col}: executing {} at <{context}>: {msg}",
                crate::lex::go_quote(exec_name)
            ),
            message: msg,
        }
    }

    pub(crate) fn other(name: &str, full: String) -> Error {
        Error {
            kind: ErrorKind::Other,
            name: name.to_string(),
            line: 0,
            col: None,
            message: full.clone(),
            full,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl std::error::Error for Error {}
