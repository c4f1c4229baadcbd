//! The plain block YAML most manifests are written in, read without the general parser.
//!
//! A Deployment written the usual way (block mappings and sequences, one scalar per line,
//! plain or quoted on one line, `[]` and `{}`, comments) took the general YAML 1.2 parser about
//! 100 µs per three small objects, about a tenth of an agent's CPU per deploy in `fleet bench
//! scale`.
//! [`events`] reads that subset line by line and yields the parser's own events with the same
//! lines; anything else (flow collections, block scalars, anchors, tags, tabs, multi-line or
//! escaped scalars, complex keys, non-ASCII text, anything it is unsure of) makes it return
//! `None`, and the caller parses the text with the general parser instead. A property test holds
//! that whenever it answers, the general parser reads the same events from the same text.

use std::borrow::Cow;

use serde_saphyr::granit_parser::{Event, ScalarStyle, StructureStyle};

/// One content line: its 1-based number, indentation and text after it (comments not yet cut).
#[derive(Clone, Copy)]
struct Line<'a> {
    no: usize,
    indent: usize,
    text: &'a str,
}

/// The node events of `text` (no stream or document events but a `DocumentStart` before each
/// document), each with its 1-based line, or `None` if `text` is not in the subset.
pub(crate) fn events(text: &str) -> Option<Vec<(Event<'_>, usize)>> {
    if !text.is_ascii() || text.contains(['\t', '\r']) {
        return None;
    }
    let mut out = Vec::new();
    let mut doc: Vec<Line<'_>> = Vec::new();
    // The line of the `---` that started the current document, if one did.
    let mut explicit = None;
    for (i, raw) in text.split('\n').enumerate() {
        let trimmed = raw.trim_start_matches(' ');
        if trimmed.starts_with("---") || trimmed.starts_with("...") || trimmed.starts_with('%') {
            // Only a bare `---` at the start of a line separates documents here.
            if raw.trim_end_matches(' ') != "---" {
                return None;
            }
            document(std::mem::take(&mut doc), explicit, &mut out)?;
            explicit = Some(i + 1);
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        doc.push(Line {
            no: i + 1,
            indent: raw.len() - trimmed.len(),
            text: trimmed,
        });
    }
    document(doc, explicit, &mut out)?;
    Some(out)
}

/// The events of one document's lines; one started by `---` on line `explicit` without
/// content is a null (`~`) on that line, as the parser reads it.
fn document<'a>(
    lines: Vec<Line<'a>>,
    explicit: Option<usize>,
    out: &mut Vec<(Event<'a>, usize)>,
) -> Option<()> {
    let Some(first) = lines.first() else {
        if let Some(no) = explicit {
            out.push((Event::DocumentStart(true, None), no));
            out.push((scalar(Cow::Borrowed("~"), ScalarStyle::Plain), no));
        }
        return Some(());
    };
    out.push((Event::DocumentStart(false, None), first.no));
    let mut r = Reader {
        lines,
        pos: 0,
        out,
        depth: 0,
    };
    let indent = r.lines[0].indent;
    r.node(indent)?;
    // Everything must have been read.
    (r.pos == r.lines.len()).then_some(())
}

/// Collections nested deeper than this are left to the general parser (which refuses more
/// than 255), so the reader's recursion stays shallow whatever a repository holds.
const MAX_DEPTH: usize = 64;

struct Reader<'a, 'o> {
    lines: Vec<Line<'a>>,
    pos: usize,
    out: &'o mut Vec<(Event<'a>, usize)>,
    /// Block collections open around the current line.
    depth: usize,
}

/// `- ` or a lone `-` starts a sequence item.
fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// A key this reader takes: a plain word of letters, digits and `._/-`, not starting with `-`.
fn plain_key(key: &str) -> bool {
    key.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'/')
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'/' | b'-'))
}

/// Splits `key: rest` or `key:` (rest empty), or `None` if the line is not such a key line.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let (key, rest) = (&text[..colon], &text[colon + 1..]);
    if !plain_key(key) {
        return None;
    }
    if rest.is_empty() {
        return Some((key, ""));
    }
    rest.strip_prefix(' ')
        .map(|r| (key, r.trim_start_matches(' ')))
}

/// A scalar written on one line (after `key: ` or `- `): its value and style, or `None`
/// outside the subset. An empty `text` (or only a comment) is not a scalar here.
fn inline_scalar(text: &str) -> Option<(Cow<'_, str>, ScalarStyle)> {
    let first = *text.as_bytes().first()?;
    match first {
        b'"' => {
            let end = text[1..].find('"')? + 1;
            let value = &text[1..end];
            if value.contains('\\') || !after_scalar(&text[end + 1..]) {
                return None;
            }
            Some((Cow::Borrowed(value), ScalarStyle::DoubleQuoted))
        }
        b'\'' => {
            // `''` is a quote inside; the first lone `'` ends the scalar.
            let b = text.as_bytes();
            let mut i = 1;
            loop {
                match b.get(i)? {
                    b'\'' if b.get(i + 1) == Some(&b'\'') => i += 2,
                    b'\'' => break,
                    _ => i += 1,
                }
            }
            if !after_scalar(&text[i + 1..]) {
                return None;
            }
            let value = &text[1..i];
            let value = if value.contains("''") {
                Cow::Owned(value.replace("''", "'"))
            } else {
                Cow::Borrowed(value)
            };
            Some((value, ScalarStyle::SingleQuoted))
        }
        _ => {
            let plain_start = first.is_ascii_alphanumeric()
                || matches!(first, b'_' | b'.' | b'/' | b'$' | b'(' | b'+' | b'~')
                || (first == b'-' && text.len() > 1 && text.as_bytes()[1] != b' ');
            if !plain_start {
                return None;
            }
            // A comment starts at ` #`.
            let value = match text.find(" #") {
                Some(i) => &text[..i],
                None => text,
            }
            .trim_end_matches(' ');
            if value.contains(": ")
                || value.ends_with(':')
                || value.contains(['[', ']', '{', '}', '"', '\''])
            {
                return None;
            }
            Some((Cow::Borrowed(value), ScalarStyle::Plain))
        }
    }
}

/// What may follow a quoted scalar on its line: nothing, spaces, or spaces and a comment.
fn after_scalar(rest: &str) -> bool {
    let t = rest.trim_start_matches(' ');
    t.is_empty() || (t.starts_with('#') && t.len() < rest.len())
}

fn scalar<'a>(value: Cow<'a, str>, style: ScalarStyle) -> Event<'a> {
    Event::Scalar(value, style, 0, None)
}

impl<'a> Reader<'a, '_> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.pos).copied()
    }

    /// A value written on line `no` after `key: ` or `- `: a scalar, or an empty collection in
    /// flow style (`[]`, `{}`: what go-yaml writes for an empty list or map).
    fn inline(&mut self, text: &'a str, no: usize) -> Option<()> {
        for (open, start, end) in [
            (
                "[]",
                Event::SequenceStart(StructureStyle::Flow, 0, None),
                Event::SequenceEnd,
            ),
            (
                "{}",
                Event::MappingStart(StructureStyle::Flow, 0, None),
                Event::MappingEnd,
            ),
        ] {
            if let Some(rest) = text.strip_prefix(open) {
                if !after_scalar(rest) {
                    return None;
                }
                self.out.push((start, no));
                self.out.push((end, no));
                return Some(());
            }
        }
        let (value, style) = inline_scalar(text)?;
        self.out.push((scalar(value, style), no));
        Some(())
    }

    /// The node starting at the current line, indented `indent`.
    fn node(&mut self, indent: usize) -> Option<()> {
        let line = self.peek()?;
        if line.indent != indent {
            return None;
        }
        if is_item(line.text) {
            self.nested(|r| r.sequence(indent))
        } else if split_key(line.text).is_some() {
            self.nested(|r| r.mapping(indent))
        } else {
            None
        }
    }

    /// Reads a collection one level deeper, or declines past [`MAX_DEPTH`].
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Option<()>) -> Option<()> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let r = read(self);
        self.depth -= 1;
        r
    }

    fn mapping(&mut self, indent: usize) -> Option<()> {
        let start = self.peek()?.no;
        self.out
            .push((Event::MappingStart(StructureStyle::Block, 0, None), start));
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || is_item(line.text) {
                return None;
            }
            let (key, rest) = split_key(line.text)?;
            self.out
                .push((scalar(Cow::Borrowed(key), ScalarStyle::Plain), line.no));
            self.pos += 1;
            if rest.is_empty() || rest.starts_with('#') {
                match self.peek() {
                    Some(next) if next.indent > indent => self.node(next.indent)?,
                    Some(next) if next.indent == indent && is_item(next.text) => {
                        self.nested(|r| r.sequence(indent))?
                    }
                    // An empty value: the parser reads it as `~`, on the key's line.
                    _ => self
                        .out
                        .push((scalar(Cow::Borrowed("~"), ScalarStyle::Plain), line.no)),
                }
            } else {
                self.inline(rest, line.no)?;
                if self.peek().is_some_and(|next| next.indent > indent) {
                    return None;
                }
            }
        }
        self.out.push((Event::MappingEnd, start));
        Some(())
    }

    fn sequence(&mut self, indent: usize) -> Option<()> {
        let start = self.peek()?.no;
        self.out
            .push((Event::SequenceStart(StructureStyle::Block, 0, None), start));
        while let Some(line) = self.peek() {
            if line.indent != indent || !is_item(line.text) {
                if line.indent > indent {
                    return None;
                }
                break;
            }
            let content = line.text.get(2..)?.trim_start_matches(' ');
            let column = indent + (line.text.len() - content.len());
            if content.is_empty() || content.starts_with('#') || is_item(content) {
                return None;
            }
            if split_key(content).is_some() {
                // `- key: value`: a mapping whose keys line up under this first one.
                self.lines[self.pos] = Line {
                    no: line.no,
                    indent: column,
                    text: content,
                };
                self.nested(|r| r.mapping(column))?;
            } else {
                self.inline(content, line.no)?;
                self.pos += 1;
                if self.peek().is_some_and(|next| next.indent > indent) {
                    return None;
                }
            }
        }
        self.out.push((Event::SequenceEnd, start));
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_saphyr::granit_parser::Parser;

    /// Node events as comparable text with their lines (ends without: the reader keeps the
    /// start's line for a collection).
    fn repr(ev: &Event<'_>, line: usize) -> Option<(String, usize)> {
        Some(match ev {
            Event::Scalar(v, style, anchor, tag) => {
                (format!("scalar {style:?} {anchor} {tag:?} {v:?}"), line)
            }
            Event::MappingStart(s, a, t) => (format!("map {s:?} {a} {t:?}"), line),
            Event::SequenceStart(s, a, t) => (format!("seq {s:?} {a} {t:?}"), line),
            Event::MappingEnd => ("end map".into(), 0),
            Event::SequenceEnd => ("end seq".into(), 0),
            _ => return None,
        })
    }

    fn general(text: &str) -> Result<Vec<(String, usize)>, String> {
        let mut out = Vec::new();
        for ev in Parser::new_from_str(text) {
            let (ev, span) = ev.map_err(|e| e.info().to_string())?;
            out.extend(repr(&ev, span.start.line()));
        }
        Ok(out)
    }

    fn fast(text: &str) -> Option<Vec<(String, usize)>> {
        Some(
            events(text)?
                .iter()
                .filter_map(|(ev, line)| repr(ev, *line))
                .collect(),
        )
    }

    /// Whenever the reader answers, the general parser reads the same events from the text.
    fn agrees(text: &str) -> Result<(), TestCaseError> {
        if let Some(f) = fast(text) {
            let g = general(text);
            prop_assert_eq!(Ok(f), g, "text:\n{}", text);
        }
        Ok(())
    }

    #[test]
    fn reads_a_manifest() {
        let text = "# a comment\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the name\n  labels:\n    app.kubernetes.io/name: web\n    tier: \"front end\"\n  annotations:\n    note: 'it''s here'\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n        args:\n        - --port=80\n        - -v\n        ports:\n          - containerPort: 80\n            protocol: TCP\n      nodeSelector:\n      empty:\n---\napiVersion: v1\nkind: Service\n";
        let f = fast(text).expect("in the subset");
        assert_eq!(Ok(f), general(text));
    }

    /// What go-yaml's emitter writes (Helm's and kubectl's output, `fleet bench scale`'s
    /// manifests) is read here, not by the general parser.
    #[test]
    fn reads_what_go_yaml_writes() {
        let objects = serde_json::json!([
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "b0-o1", "labels": {"bench.fleet/object": "true", "app": "b0-o1"},
                          "annotations": {"bench.fleet/rev": "r1", "note": "it's: here"}},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "b0-o1"}},
                      "template": {"metadata": {"labels": {"app": "b0-o1"}},
                                   "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                            "args": ["--v=2", "-x"], "env": [], "resources": {}}]}}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
             "spec": {"selector": {"app": "s"}, "ports": [{"port": 80, "targetPort": 80}]}},
        ]);
        for o in objects.as_array().into_iter().flatten() {
            let text = gotmpl::goyaml::to_yaml(o);
            let events = fast(&text);
            assert!(events.is_some(), "declined:\n{text}");
            assert_eq!(Ok(events.unwrap_or_default()), general(&text));
        }
    }

    /// Deep nesting goes to the general parser: read alike below its limit, its error above.
    #[test]
    fn declines_deep_nesting() {
        let nested = |levels: usize| -> String {
            (0..levels)
                .map(|i| format!("{}a:\n", " ".repeat(i)))
                .collect()
        };
        assert!(fast(&nested(MAX_DEPTH - 1)).is_some());
        assert_eq!(
            fast(&nested(MAX_DEPTH - 1)).ok_or(String::new()),
            general(&nested(MAX_DEPTH - 1))
        );
        assert!(fast(&nested(MAX_DEPTH + 1)).is_none());
        assert!(general(&nested(MAX_DEPTH + 1)).is_ok());
        assert!(fast(&nested(300)).is_none());
        assert!(general(&nested(300)).is_err());
        let items: String = (0..100)
            .map(|i| format!("{}- a:\n", " ".repeat(4 * i)))
            .collect();
        assert!(fast(&items).is_none());
    }

    #[test]
    fn declines_what_it_does_not_read() {
        for text in [
            "a: [1, 2]\n",
            "a: {b: c}\n",
            "a: |\n  x\n",
            "a: >\n  x\n",
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a:\tb\n",
            "a: b\r\n",
            "a: \"x\\ny\"\n",
            "a: multi\n  line\n",
            "\"quoted key\": 1\n",
            "? complex\n: key\n",
            "plain scalar document\n",
            "a: é\n",
            "--- a\n",
            "%YAML 1.1\n---\na: 1\n",
            "a: b: c\n",
            "- - nested\n",
            "-\n  a: 1\n",
        ] {
            assert!(fast(text).is_none(), "{text:?}");
        }
    }

    #[derive(Clone, Debug)]
    enum Tree {
        Scalar(&'static str),
        Map(Vec<(&'static str, Tree)>),
        Seq(Vec<Tree>),
    }

    const KEYS: &[&str] = &[
        "a",
        "b",
        "app",
        "c.d/e",
        "x-y",
        "_z",
        "on",
        "1",
        "null",
        "k8s.io/name",
    ];
    const SCALARS: &[&str] = &[
        "a",
        "b1",
        "true",
        "yes",
        "1",
        "0777",
        "1.5",
        "-3",
        "~",
        "null",
        "nginx:1.27",
        "http://x/y",
        "a,b",
        "a#b",
        "x.y/z",
        "--port=80",
        "$HOME",
        "(x)",
        "+1",
        "a b  c",
        "'it''s'",
        "'a: b'",
        "''",
        "\"a b\"",
        "\"#x\"",
        "\"\"",
        "\"it's\"",
        "a # comment",
        "'q' # comment",
        "\"q\"   # c",
        "1e3",
        "2001-12-14",
        ".5",
        "/path",
        "_x",
        "[]",
        "{}",
        "{} # c",
    ];

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = proptest::sample::select(SCALARS).prop_map(Tree::Scalar);
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec((proptest::sample::select(KEYS), inner.clone()), 0..4)
                    .prop_map(Tree::Map),
                proptest::collection::vec(inner, 0..4).prop_map(Tree::Seq),
            ]
        })
    }

    /// Writes `t` as the value of a key or item whose line is already started in `out`.
    fn write_value(t: &Tree, indent: usize, indentless: bool, out: &mut String) {
        match t {
            Tree::Scalar(s) => {
                out.push(' ');
                out.push_str(s);
                out.push('\n');
            }
            Tree::Map(m) if !m.is_empty() => {
                out.push('\n');
                write_map(m, indent + 2, out);
            }
            Tree::Seq(items) if !items.is_empty() => {
                out.push('\n');
                write_seq(
                    items,
                    if indentless { indent } else { indent + 2 },
                    indentless,
                    out,
                );
            }
            _ => out.push('\n'),
        }
    }

    fn write_map(m: &[(&str, Tree)], indent: usize, out: &mut String) {
        for (k, v) in m {
            out.push_str(&" ".repeat(indent));
            out.push_str(k);
            out.push(':');
            write_value(v, indent, k.len() % 2 == 0, out);
        }
    }

    fn write_seq(items: &[Tree], indent: usize, indentless: bool, out: &mut String) {
        for it in items {
            out.push_str(&" ".repeat(indent));
            out.push('-');
            match it {
                Tree::Map(m) if !m.is_empty() => {
                    // `- key: value`, the other keys under the first.
                    let (k, v) = &m[0];
                    out.push(' ');
                    out.push_str(k);
                    out.push(':');
                    write_value(v, indent + 2, indentless, out);
                    write_map(&m[1..], indent + 2, out);
                }
                Tree::Scalar(_) => write_value(it, indent, indentless, out),
                // Nested sequences and empty collections are outside the subset.
                _ => out.push_str(" x\n"),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Generated block documents are read, and read as the general parser reads them.
        #[test]
        fn generated_documents_read_alike(docs in proptest::collection::vec(
            proptest::collection::vec((proptest::sample::select(KEYS), tree()), 1..5), 1..3),
            blank in 0usize..3,
        ) {
            let mut text = String::new();
            for (i, d) in docs.iter().enumerate() {
                if i > 0 {
                    text.push_str("---\n");
                }
                text.push_str(&"\n".repeat(blank));
                write_map(d, 0, &mut text);
            }
            prop_assert!(fast(&text).is_some(), "declined:\n{}", text);
            agrees(&text)?;
        }

        /// Any text made of YAML's pieces: if the reader answers, it answers as the parser.
        #[test]
        fn any_text_reads_alike_or_is_declined(pieces in proptest::collection::vec(
            proptest::sample::select(&[
                "a", "b", "1", "x y", ":", ": ", "- ", "-", "\n", "\n", "\n", " ", "  ", "#",
                " #c", "'", "''", "\"", "---", "...", ",", "[", "{", "&a", "*a", "!t", "|",
                "key: v\n", "  - i\n", "- k: v\n", "    ", "\\", "?", "%", "~", "é", "\t",
            ][..]), 0..40)) {
            agrees(&pieces.concat())?;
        }

        /// Lines of keys, items and scalars at any indentation, mostly in the subset: if the
        /// reader answers, it answers as the parser.
        #[test]
        fn any_lines_read_alike_or_are_declined(lines in proptest::collection::vec((
            proptest::sample::select(&["", " ", "  ", "   ", "    ", "      "][..]),
            proptest::sample::select(&[
                "a:", "b: v", "c: 1", "- ", "- x", "- k: v", "- k:", "-", "d: 'q'", "e: \"w\"",
                "f: x # c", "# c", "", "---", "g: - x", "h: x:", "i: a:b", "j: 'a''b'",
                "k: \"a #b\"", "l: x  ", "m: #c", "n:  v", "v", "o: 'x' y", "p: \"x\"y",
                "- - x", "q: ~", "r:x", "- 'a'", "- \"b\" #c", "s: -", "t: --x", "...",
                "u: []", "w: {}", "- []", "- {} #c", "y: []x", "z: {}#c", "- [ ]",
            ][..]),
        ), 0..16)) {
            let text: String = lines.iter().map(|(i, l)| format!("{i}{l}\n")).collect();
            agrees(&text)?;
        }
    }
}
