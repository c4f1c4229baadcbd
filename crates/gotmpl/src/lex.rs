//! Lexer for Go's text/template syntax, following the item stream of Go's `text/template/parse`.

/// Kinds of lexical items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum T {
    Error,
    Eof,
    Text,
    LeftDelim,
    RightDelim,
    Comment,
    Space,
    Assign,
    Declare,
    Pipe,
    LeftParen,
    RightParen,
    Char,
    CharConst,
    Bool,
    Number,
    Str,
    RawStr,
    Field,
    Variable,
    Identifier,
    Dot,
    Nil,
    // keywords
    Block,
    Break,
    Continue,
    Define,
    Else,
    End,
    If,
    Range,
    Template,
    With,
}

/// One lexical item: kind, byte offset, text and the line it starts on.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub t: T,
    pub pos: usize,
    pub val: std::rc::Rc<str>,
    pub line: usize,
}

impl Item {
    /// Go's item String() used in "unexpected X" messages.
    pub fn describe(&self) -> String {
        match self.t {
            T::Eof => "EOF".into(),
            T::Error => self.val.to_string(),
            T::Block
            | T::Break
            | T::Continue
            | T::Define
            | T::Else
            | T::End
            | T::If
            | T::Range
            | T::Template
            | T::With
            | T::Nil
            | T::Dot => format!("<{}>", self.val),
            _ => {
                if self.val.chars().count() > 10 {
                    let s: String = self.val.chars().take(10).collect();
                    format!("{}...", go_quote(&s))
                } else {
                    go_quote(&self.val)
                }
            }
        }
    }
}

/// Go's `%q` for a string (strconv.Quote).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Approximation of Go's unicode.IsPrint.
pub(crate) fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c as u32, 0xad | 0x600..=0x605 | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb | 0xe000..=0xf8ff))
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Go's default action delimiters.
pub(crate) const DEFAULT_LEFT: &str = "{{";
/// Go's default right delimiter.
pub(crate) const DEFAULT_RIGHT: &str = "}}";

/// Tokenizes the whole input (the parser wants lookahead; templates are small) with the given
/// action delimiters (Go's `Delims`; an empty one means the default).
pub(crate) fn lex(input: &str, left: &str, right: &str) -> Vec<Item> {
    let mut l = Lexer {
        input,
        left: if left.is_empty() { DEFAULT_LEFT } else { left },
        right: if right.is_empty() {
            DEFAULT_RIGHT
        } else {
            right
        },
        pos: 0,
        start: 0,
        line: 1,
        start_line: 1,
        items: Vec::new(),
        paren_depth: 0,
    };
    l.run();
    l.items
}

struct Lexer<'a> {
    input: &'a str,
    left: &'a str,
    right: &'a str,
    pos: usize,
    start: usize,
    line: usize,
    start_line: usize,
    items: Vec<Item>,
    paren_depth: i32,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        self.input.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn emit(&mut self, t: T) {
        let val: std::rc::Rc<str> = self.input.get(self.start..self.pos).unwrap_or("").into();
        self.items.push(Item {
            t,
            pos: self.start,
            val,
            line: self.start_line,
        });
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn ignore(&mut self) {
        let skipped = self.input.get(self.start..self.pos).unwrap_or("");
        self.line += 0;
        let _ = skipped;
        self.start = self.pos;
        self.start_line = self.line;
    }

    /// Advances pos by n bytes, counting newlines.
    fn skip(&mut self, n: usize) {
        let end = (self.pos + n).min(self.input.len());
        let s = self.input.get(self.pos..end).unwrap_or("");
        self.line += s.bytes().filter(|&b| b == b'\n').count();
        self.pos = end;
    }

    fn error(&mut self, msg: String) {
        self.items.push(Item {
            t: T::Error,
            pos: self.start,
            val: msg.into(),
            line: self.start_line,
        });
    }

    fn run(&mut self) {
        // Alternate between text and actions.
        loop {
            // lexText
            let rest = self.rest();
            match rest.find(self.left) {
                Some(x) => {
                    let delim_pos = self.pos + x;
                    let after = self.input.get(delim_pos + self.left.len()..).unwrap_or("");
                    let trim = has_left_trim(after);
                    let mut text_end = delim_pos;
                    if trim {
                        let text = self.input.get(self.pos..delim_pos).unwrap_or("");
                        text_end = self.pos + text.trim_end_matches([' ', '\t', '\r', '\n']).len();
                    }
                    self.skip(text_end - self.pos);
                    if self.pos > self.start {
                        self.emit(T::Text);
                    }
                    self.skip(delim_pos - self.pos);
                    self.ignore();
                    if !self.lex_left_delim() {
                        return;
                    }
                }
                None => {
                    self.pos = self.input.len();
                    let s = self.input.get(self.start..).unwrap_or("");
                    self.line += s.bytes().filter(|&b| b == b'\n').count();
                    if self.pos > self.start {
                        self.emit(T::Text);
                    }
                    self.emit_eof();
                    return;
                }
            }
        }
    }

    fn emit_eof(&mut self) {
        self.items.push(Item {
            t: T::Eof,
            pos: self.pos,
            val: "".into(),
            line: self.line,
        });
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let r = self.rest();
        let b = r.as_bytes();
        if b.len() >= 2 && is_space(b[0]) && b[1] == b'-' && r[2..].starts_with(self.right) {
            return (true, true);
        }
        if r.starts_with(self.right) {
            return (true, false);
        }
        (false, false)
    }

    /// Returns false when lexing must stop (error emitted).
    fn lex_left_delim(&mut self) -> bool {
        self.skip(self.left.len());
        let trim = has_left_trim(self.rest());
        let after_marker = if trim { 2 } else { 0 };
        if self
            .input
            .get(self.pos + after_marker..)
            .unwrap_or("")
            .starts_with("/*")
        {
            self.skip(after_marker);
            self.ignore();
            return self.lex_comment();
        }
        self.emit(T::LeftDelim);
        self.skip(after_marker);
        self.ignore();
        self.paren_depth = 0;
        self.lex_inside_action()
    }

    fn lex_comment(&mut self) -> bool {
        self.skip(2);
        let Some(i) = self.rest().find("*/") else {
            self.error("unclosed comment".into());
            return false;
        };
        self.skip(i + 2);
        let (delim, trim) = self.at_right_delim();
        if !delim {
            self.error("comment ends before closing delimiter".into());
            return false;
        }
        // Comments are not passed to the parser (Go drops them unless asked).
        self.emit_comment();
        if trim {
            self.skip(2);
        }
        self.skip(self.right.len());
        if trim {
            let n = left_trim_len(self.rest());
            self.skip(n);
        }
        self.ignore();
        true
    }

    fn emit_comment(&mut self) {
        self.items.push(Item {
            t: T::Comment,
            pos: self.start,
            val: "".into(),
            line: self.start_line,
        });
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn lex_right_delim(&mut self, trim: bool) {
        if trim {
            self.skip(2);
            self.ignore();
        }
        self.skip(self.right.len());
        self.emit(T::RightDelim);
        if trim {
            let n = left_trim_len(self.rest());
            self.skip(n);
            self.ignore();
        }
    }

    fn lex_inside_action(&mut self) -> bool {
        loop {
            let (delim, trim) = self.at_right_delim();
            if delim {
                if self.paren_depth == 0 {
                    self.lex_right_delim(trim);
                    return true;
                }
                self.error("unclosed left paren".into());
                return false;
            }
            let Some(r) = self.next() else {
                self.error("unclosed action".into());
                return false;
            };
            match r {
                ' ' | '\t' | '\r' | '\n' => {
                    // lexSpace
                    let mut num = 1;
                    while let Some(c) = self.peek() {
                        if !matches!(c, ' ' | '\t' | '\r' | '\n') {
                            break;
                        }
                        self.next();
                        num += 1;
                    }
                    let back = self.pos - 1;
                    let tail = self.input.get(back..).unwrap_or("");
                    let tb = tail.as_bytes();
                    if tb.len() >= 2
                        && is_space(tb[0])
                        && tb[1] == b'-'
                        && tail[2..].starts_with(self.right)
                    {
                        // backup before the last space
                        self.pos = back;
                        if tb[0] == b'\n' {
                            self.line -= 1;
                        }
                        if num == 1 {
                            self.lex_right_delim(true);
                            return true;
                        }
                    }
                    self.emit(T::Space);
                }
                '=' => self.emit(T::Assign),
                ':' => {
                    if self.next() != Some('=') {
                        self.error("expected :=".into());
                        return false;
                    }
                    self.emit(T::Declare);
                }
                '|' => self.emit(T::Pipe),
                '"' => {
                    if !self.lex_quote() {
                        return false;
                    }
                }
                '`' => {
                    let Some(i) = self.rest().find('`') else {
                        self.error("unterminated raw quoted string".into());
                        return false;
                    };
                    self.skip(i + 1);
                    self.emit(T::RawStr);
                }
                '$' => {
                    if !self.lex_field_or_var(T::Variable) {
                        return false;
                    }
                }
                '\'' => {
                    if !self.lex_char() {
                        return false;
                    }
                }
                '.' => {
                    let nxt = self.peek();
                    if nxt.is_some_and(|c| !c.is_ascii_digit()) || nxt.is_none() {
                        if !self.lex_field_or_var(T::Field) {
                            return false;
                        }
                    } else {
                        self.pos -= 1;
                        if !self.lex_number() {
                            return false;
                        }
                    }
                }
                '+' | '-' | '0'..='9' => {
                    self.pos -= 1;
                    if !self.lex_number() {
                        return false;
                    }
                }
                '(' => {
                    self.emit(T::LeftParen);
                    self.paren_depth += 1;
                }
                ')' => {
                    // Go 1.16 emits the paren before complaining, so the parser usually
                    // reports `unexpected ")"` first.
                    self.emit(T::RightParen);
                    self.paren_depth -= 1;
                    if self.paren_depth < 0 {
                        self.error("unexpected right paren U+0029 ')'".into());
                        return false;
                    }
                }
                c if is_alnum(c) => {
                    self.pos -= c.len_utf8();
                    if !self.lex_identifier() {
                        return false;
                    }
                }
                c if c.is_ascii() && is_go_printable(c) => self.emit(T::Char),
                c => {
                    self.error(format!(
                        "unrecognized character in action: {}",
                        unicode_desc(c)
                    ));
                    return false;
                }
            }
        }
    }

    /// Go's atTerminator: space, punctuation that may follow an operand, or the right delimiter.
    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(' ' | '\t' | '\r' | '\n' | '.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.rest().starts_with(self.right),
        }
    }

    fn lex_identifier(&mut self) -> bool {
        while let Some(c) = self.peek() {
            if !is_alnum(c) {
                break;
            }
            self.next();
        }
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            self.error(format!("bad character {}", unicode_desc(c)));
            return false;
        }
        let word = self.input.get(self.start..self.pos).unwrap_or("");
        let t = match word {
            "block" => T::Block,
            "break" => T::Break,
            "continue" => T::Continue,
            "define" => T::Define,
            "else" => T::Else,
            "end" => T::End,
            "if" => T::If,
            "range" => T::Range,
            "nil" => T::Nil,
            "template" => T::Template,
            "with" => T::With,
            "true" | "false" => T::Bool,
            _ => T::Identifier,
        };
        self.emit(t);
        true
    }

    fn lex_field_or_var(&mut self, t: T) -> bool {
        if self.at_terminator() {
            self.emit(if t == T::Variable {
                T::Variable
            } else {
                T::Dot
            });
            return true;
        }
        while let Some(c) = self.peek() {
            if !is_alnum(c) {
                break;
            }
            self.next();
        }
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            self.error(format!("bad character {}", unicode_desc(c)));
            return false;
        }
        self.emit(t);
        true
    }

    fn lex_char(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => {
                    if let Some(c) = self.next()
                        && c != '\n'
                    {
                        continue;
                    }
                    self.error("unterminated character constant".into());
                    return false;
                }
                None | Some('\n') => {
                    self.error("unterminated character constant".into());
                    return false;
                }
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(T::CharConst);
        true
    }

    fn lex_quote(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => {
                    if let Some(c) = self.next()
                        && c != '\n'
                    {
                        continue;
                    }
                    self.error("unterminated quoted string".into());
                    return false;
                }
                None | Some('\n') => {
                    self.error("unterminated quoted string".into());
                    return false;
                }
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(T::Str);
        true
    }

    fn accept(&mut self, valid: &str) -> bool {
        if let Some(c) = self.peek()
            && valid.contains(c)
        {
            self.next();
            return true;
        }
        false
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn lex_number(&mut self) -> bool {
        if !self.scan_number() {
            let v = self
                .input
                .get(self.start..self.pos)
                .unwrap_or("")
                .to_string();
            self.error(format!("bad number syntax: {}", go_quote(&v)));
            return false;
        }
        self.emit(T::Number);
        true
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 10 + 1 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 16 + 6 + 1 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if let Some(c) = self.peek()
            && is_alnum(c)
        {
            self.next();
            return false;
        }
        true
    }
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1])
}

fn left_trim_len(s: &str) -> usize {
    s.len() - s.trim_start_matches([' ', '\t', '\r', '\n']).len()
}

/// Go's `%#U` for a rune: `U+0023 '#'`.
pub(crate) fn unicode_desc(c: char) -> String {
    if is_go_printable(c) {
        format!("U+{:04X} '{}'", c as u32, c)
    } else {
        format!("U+{:04X}", c as u32)
    }
}
