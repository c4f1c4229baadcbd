//! go-yaml's line breaks for a YAML 1.2 parser. go-yaml (v2 and v3, like libyaml) breaks lines
//! at U+0085 (NEL), U+2028 (LS) and U+2029 (PS) as well as at CR and LF; YAML 1.2 parsers such
//! as granit treat those three as content. go-yaml's emitters write LS and PS raw in
//! single-quoted and literal scalars (`'x<LS>  y'`, the indentation after the break is not
//! content), so reading Helm's or kustomize's output needs go-yaml's view of lines.
//!
//! [`GoLines`] hands the parser a copy of the text with each of the three characters replaced
//! by a line break of the same length in characters, so the parser sees go-yaml's lines and
//! its positions index the original text. Reading breaks this way gives go-yaml's value
//! directly for NEL (go-yaml reads it as `\n`), but go-yaml keeps LS and PS themselves in
//! the value, and does not fold them into a space; [`GoLines::scalar`] re-reads scalars
//! whose source holds one of them from the original text, with go-yaml's rules.

use std::borrow::Cow;

use granit_parser::{Event, ScalarStyle, Span};

/// Source text with go-yaml's line breaks made visible to a YAML 1.2 parser.
pub struct GoLines<'a> {
    text: Cow<'a, str>,
    /// The original characters, kept only when the text holds LS or PS.
    chars: Vec<char>,
    /// Sorted character indices of LS and PS.
    seps: Vec<usize>,
}

fn is_go_only_break(c: char) -> bool {
    matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n') || is_go_only_break(c)
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl<'a> GoLines<'a> {
    /// Prepares `original` (borrowed unchanged when it holds none of the three characters).
    pub fn new(original: &'a str) -> Self {
        if !original.chars().any(is_go_only_break) {
            return GoLines {
                text: Cow::Borrowed(original),
                chars: Vec::new(),
                seps: Vec::new(),
            };
        }
        let chars: Vec<char> = original.chars().collect();
        let mut text = String::with_capacity(original.len());
        let mut seps = Vec::new();
        for (i, &c) in chars.iter().enumerate() {
            if is_go_only_break(c) {
                if c != '\u{85}' {
                    seps.push(i);
                }
                // After CR, an LF would join it into one CRLF break; go-yaml sees two.
                text.push(if i > 0 && chars[i - 1] == '\r' {
                    '\r'
                } else {
                    '\n'
                });
            } else {
                text.push(c);
            }
        }
        GoLines {
            text: Cow::Owned(text),
            chars,
            seps,
        }
    }

    /// The text to parse.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The scalar go-yaml reads where the parser read `value` (with `style`, at `span`).
    /// Errors for the scalar styles go-yaml's emitters never write LS or PS into and this
    /// reader does not re-read (folded blocks).
    pub fn scalar<'v>(
        &self,
        value: Cow<'v, str>,
        style: ScalarStyle,
        span: &Span,
    ) -> Result<Cow<'v, str>, String> {
        let (start, end) = (span.start.index(), span.end.index());
        if style == ScalarStyle::Literal {
            // A literal block's span may start after its leading empty lines and end before
            // its kept trailing ones: look from its header on.
            let header = self.header_end(start);
            if self.seps.partition_point(|&i| i < header) == self.seps.len() {
                return Ok(value);
            }
            return Ok(Cow::Owned(self.literal(&value, header)));
        }
        let first = self.seps.partition_point(|&i| i < start);
        if first == self.seps.len() || self.seps[first] >= end {
            return Ok(value);
        }
        let end = end.min(self.chars.len());
        let src = &self.chars[start.min(end)..end];
        let out = match style {
            ScalarStyle::Plain => flow(src, Quote::None),
            ScalarStyle::SingleQuoted => flow(inner(src), Quote::Single),
            ScalarStyle::DoubleQuoted => flow(inner(src), Quote::Double),
            ScalarStyle::Literal | ScalarStyle::Folded => None,
        };
        out.map(Cow::Owned).ok_or_else(|| {
            format!(
                "line {}: U+2028/U+2029 in a {} scalar is not supported",
                span.start.line(),
                match style {
                    ScalarStyle::Folded => "folded",
                    _ => "double-quoted",
                }
            )
        })
    }

    /// The event with its scalar (if any) read as go-yaml reads it (see [`GoLines::scalar`]).
    pub fn event<'e>(&self, ev: Event<'e>, span: &Span) -> Result<Event<'e>, String> {
        Ok(match ev {
            Event::Scalar(v, style, anchor, tag) => {
                Event::Scalar(self.scalar(v, style, span)?, style, anchor, tag)
            }
            other => other,
        })
    }

    /// Where a block scalar's header line ends: back from the scalar's start over blanks
    /// and empty lines to the last indicator or comment character.
    fn header_end(&self, start: usize) -> usize {
        let mut h = start.min(self.chars.len());
        while h > 0 && (is_blank(self.chars[h - 1]) || is_break(self.chars[h - 1])) {
            h -= 1;
        }
        h
    }

    /// A literal block: the parser's value has one `\n` per line break go-yaml keeps, in
    /// order, and they are the breaks that follow the block's header line (which ends at `h`).
    fn literal(&self, value: &str, h: usize) -> String {
        let wanted = value.matches('\n').count();
        let mut breaks = Vec::new();
        let mut i = h;
        let mut header_done = false;
        while i < self.chars.len() && breaks.len() < wanted {
            let c = self.chars[i];
            if is_break(c) {
                if header_done {
                    breaks.push(if matches!(c, '\u{2028}' | '\u{2029}') {
                        c
                    } else {
                        '\n'
                    });
                }
                header_done = true;
                if c == '\r' && self.chars.get(i + 1) == Some(&'\n') {
                    i += 1;
                }
            }
            i += 1;
        }
        let mut breaks = breaks.into_iter();
        value
            .chars()
            .map(|c| {
                if c == '\n' {
                    breaks.next().unwrap_or('\n')
                } else {
                    c
                }
            })
            .collect()
    }
}

fn inner(src: &[char]) -> &[char] {
    if src.len() >= 2 {
        &src[1..src.len() - 1]
    } else {
        &[]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Quote {
    None,
    Single,
    Double,
}

/// go-yaml's `read_line`: CRLF, CR, LF and NEL read as `\n`, LS and PS as themselves.
fn read_line(src: &[char], i: usize) -> (char, usize) {
    match src[i] {
        '\r' if src.get(i + 1) == Some(&'\n') => ('\n', 2),
        c @ ('\u{2028}' | '\u{2029}') => (c, 1),
        _ => ('\n', 1),
    }
}

/// go-yaml's flow and plain scalar scanning (`yaml_parser_scan_flow_scalar`,
/// `yaml_parser_scan_plain_scalar`) over a scalar's source, without its quotes. `None` for an
/// escape go-yaml would refuse (the parser accepted it, so this does not happen in practice).
fn flow(src: &[char], quote: Quote) -> Option<String> {
    let mut out = String::new();
    let mut i = 0;
    while i < src.len() {
        let mut leading_blanks = false;
        while i < src.len() && !is_blank(src[i]) && !is_break(src[i]) {
            let c = src[i];
            if quote == Quote::Single && c == '\'' && src.get(i + 1) == Some(&'\'') {
                out.push('\'');
                i += 2;
            } else if quote == Quote::Double && c == '\\' {
                if src.get(i + 1).is_some_and(|&n| is_break(n)) {
                    // An escaped line break joins the lines.
                    i += 1 + read_line(src, i + 1).1;
                    leading_blanks = true;
                    break;
                }
                let (ch, used) = escape(&src[i + 1..])?;
                out.push(ch);
                i += 1 + used;
            } else {
                out.push(c);
                i += 1;
            }
        }
        let mut whitespace = String::new();
        let mut leading_break: Option<char> = None;
        let mut trailing = String::new();
        while i < src.len() && (is_blank(src[i]) || is_break(src[i])) {
            if is_blank(src[i]) {
                if !leading_blanks {
                    whitespace.push(src[i]);
                }
                i += 1;
            } else {
                let (b, used) = read_line(src, i);
                i += used;
                if leading_blanks {
                    trailing.push(b);
                } else {
                    whitespace.clear();
                    leading_break = Some(b);
                    leading_blanks = true;
                }
            }
        }
        if leading_blanks {
            match leading_break {
                Some('\n') if trailing.is_empty() => out.push(' '),
                Some('\n') => out.push_str(&trailing),
                other => {
                    out.extend(other);
                    out.push_str(&trailing);
                }
            }
        } else {
            out.push_str(&whitespace);
        }
    }
    Some(out)
}

/// One double-quoted escape after its backslash: the character and how many source
/// characters it used.
fn escape(rest: &[char]) -> Option<(char, usize)> {
    let c = *rest.first()?;
    let simple = match c {
        '0' => Some('\0'),
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        't' | '\t' => Some('\t'),
        'n' => Some('\n'),
        'v' => Some('\x0b'),
        'f' => Some('\x0c'),
        'r' => Some('\r'),
        'e' => Some('\x1b'),
        ' ' => Some(' '),
        '"' => Some('"'),
        '\'' => Some('\''),
        '/' => Some('/'),
        '\\' => Some('\\'),
        'N' => Some('\u{85}'),
        '_' => Some('\u{a0}'),
        'L' => Some('\u{2028}'),
        'P' => Some('\u{2029}'),
        _ => None,
    };
    if let Some(ch) = simple {
        return Some((ch, 1));
    }
    let len = match c {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        _ => return None,
    };
    let hex: String = rest.get(1..1 + len)?.iter().collect();
    let code = u32::from_str_radix(&hex, 16).ok()?;
    Some((char::from_u32(code)?, 1 + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use granit_parser::Parser;

    /// Scalars as go-yaml reads them, through [`GoLines`].
    fn scalars(text: &str) -> Result<Vec<String>, String> {
        let lines = GoLines::new(text);
        let mut out = Vec::new();
        for ev in Parser::new_from_str(lines.text()) {
            let (ev, span) = ev.map_err(|e| e.info().to_string())?;
            if let Event::Scalar(v, style, ..) = ev {
                out.push(lines.scalar(v, style, &span)?.into_owned());
            }
        }
        Ok(out)
    }

    #[test]
    fn single_quoted_keeps_the_separator_and_drops_the_indentation() {
        assert_eq!(scalars("a: 'x\u{2028}  y'\n").unwrap(), ["a", "x\u{2028}y"]);
        assert_eq!(
            scalars("\"\":\n  ? '\u{2028}    0'\n  : null\n").unwrap(),
            ["", "\u{2028}0", "null"]
        );
        assert_eq!(
            scalars("a: 'x \u{2028}\n\n y'\n").unwrap(),
            ["a", "x\u{2028}\n\ny"]
        );
        assert_eq!(
            scalars("a: 'x\n  \u{2029}  y'\n").unwrap(),
            ["a", "x\u{2029}y"]
        );
        assert_eq!(
            scalars("a: 'it''s\u{2028} x'\n").unwrap(),
            ["a", "it's\u{2028}x"]
        );
    }

    #[test]
    fn literal_blocks_keep_separators_at_any_column() {
        assert_eq!(
            scalars("k:\n- |-\n    v\u{2028}\n\u{2029}    w\n").unwrap(),
            ["k", "v\u{2028}\n\u{2029}w"]
        );
        assert_eq!(
            scalars("e: |-  # a | comment\n  l1\n  l2\u{2028}  l3\n").unwrap(),
            ["e", "l1\nl2\u{2028}l3"]
        );
    }

    #[test]
    fn plain_and_double_quoted() {
        assert_eq!(
            scalars("a: \"x\u{2028}  \\ty\"\n").unwrap(),
            ["a", "x\u{2028}\ty"]
        );
        assert_eq!(scalars("a: \"x\\\u{2028}  y\"\n").unwrap(), ["a", "xy"]);
        assert_eq!(scalars("a: x\u{2028}  y\n").unwrap(), ["a", "x\u{2028}y"]);
    }

    #[test]
    fn nel_is_a_line_break() {
        assert_eq!(scalars("a: 'x\u{85}  y'\n").unwrap(), ["a", "x y"]);
        assert_eq!(scalars("a: 1\u{85}b: 2\n").unwrap(), ["a", "1", "b", "2"]);
    }

    #[test]
    fn folded_blocks_with_separators_are_refused() {
        assert!(scalars("a: >\n  x\u{2028}  y\n").is_err());
    }
}
