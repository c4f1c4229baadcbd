//! Parser producing the template AST; mirrors Go's `text/template/parse` including its error texts.

use std::sync::Arc;

use crate::error::Error;
use crate::lex::{Item, T, go_quote, lex};
use crate::value::Value;

/// A parsed template body shared between template sets.
#[derive(Debug)]
pub(crate) struct Tree {
    pub name: String,
    pub parse_name: String,
    pub text: Arc<str>,
    pub root: Vec<Node>,
}

impl Tree {
    /// Go's IsEmptyTree: only whitespace text and comments.
    pub fn is_empty(&self) -> bool {
        list_is_empty(&self.root)
    }

    /// (line, 0-based column) of a byte offset as Go's ErrorContext computes it.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let text = self.text.get(..pos.min(self.text.len())).unwrap_or("");
        let line = 1 + text.bytes().filter(|&b| b == b'\n').count();
        let col = match text.rfind('\n') {
            Some(i) => pos - (i + 1),
            None => pos,
        };
        (line, col)
    }
}

fn list_is_empty(l: &[Node]) -> bool {
    l.iter().all(|n| match n {
        Node::Text { text, .. } => text.trim_matches([' ', '\t', '\r', '\n']).is_empty(),
        _ => false,
    })
}

/// Statement-level nodes.
#[derive(Debug)]
pub(crate) enum Node {
    Text {
        text: String,
    },
    Action {
        pipe: Pipe,
    },
    If {
        pipe: Pipe,
        list: Vec<Node>,
        else_list: Option<Vec<Node>>,
    },
    With {
        pipe: Pipe,
        list: Vec<Node>,
        else_list: Option<Vec<Node>>,
    },
    Range {
        pipe: Pipe,
        list: Vec<Node>,
        else_list: Option<Vec<Node>>,
    },
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break,
    Continue,
}

/// A pipeline with optional variable declarations.
#[derive(Debug, Clone)]
pub(crate) struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<(String, usize)>,
    pub cmds: Vec<Command>,
}

/// One command of a pipeline: function/method/value plus arguments.
#[derive(Debug, Clone)]
pub(crate) struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

/// Operands.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Field {
        pos: usize,
        idents: Vec<String>,
    },
    Variable {
        pos: usize,
        name: String,
        fields: Vec<String>,
    },
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<String>,
    },
    Identifier {
        pos: usize,
        name: String,
    },
    Dot {
        pos: usize,
    },
    Nil {
        pos: usize,
    },
    Bool {
        pos: usize,
        val: bool,
    },
    Number {
        pos: usize,
        text: String,
        num: Num,
    },
    Str {
        pos: usize,
        quoted: String,
        val: Arc<str>,
    },
    Pipe(Box<Pipe>),
}

/// A numeric constant as Go's parse.NumberNode holds it.
#[derive(Debug, Clone)]
pub(crate) struct Num {
    pub int: Option<i64>,
    pub float: Option<f64>,
    /// Whether the constant is a float in source (contains . e E p P and is not hex int/char).
    pub float_syntax: bool,
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field { pos, .. }
            | Arg::Variable { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Identifier { pos, .. }
            | Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Bool { pos, .. }
            | Arg::Number { pos, .. }
            | Arg::Str { pos, .. } => *pos,
            Arg::Pipe(p) => p.pos,
        }
    }

    /// Go's Node.String().
    pub fn write(&self, out: &mut String) {
        match self {
            Arg::Field { idents, .. } => {
                for i in idents {
                    out.push('.');
                    out.push_str(i);
                }
            }
            Arg::Variable { name, fields, .. } => {
                out.push_str(name);
                for f in fields {
                    out.push('.');
                    out.push_str(f);
                }
            }
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(_) = **node {
                    node.write(out);
                } else {
                    node.write(out);
                }
                for f in fields {
                    out.push('.');
                    out.push_str(f);
                }
            }
            Arg::Identifier { name, .. } => out.push_str(name),
            Arg::Dot { .. } => out.push('.'),
            Arg::Nil { .. } => out.push_str("nil"),
            Arg::Bool { val, .. } => out.push_str(if *val { "true" } else { "false" }),
            Arg::Number { text, .. } => out.push_str(text),
            Arg::Str { quoted, .. } => out.push_str(quoted),
            Arg::Pipe(p) => {
                out.push('(');
                p.write(out);
                out.push(')');
            }
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

impl Command {
    pub fn write(&self, out: &mut String) {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            a.write(out);
        }
    }
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

impl Pipe {
    pub fn write(&self, out: &mut String) {
        if !self.decl.is_empty() {
            for (i, (v, _)) in self.decl.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(v);
            }
            out.push_str(if self.is_assign { " = " } else { " := " });
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                out.push_str(" | ");
            }
            c.write(out);
        }
    }
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

/// Maximum nesting of parentheses/control structures, to keep recursion bounded on hostile input.
const MAX_DEPTH: usize = 1000;

enum End {
    End,
    Else,
}

struct Parser<'a> {
    items: Vec<Item>,
    i: usize,
    parse_name: String,
    text: Arc<str>,
    vars: Vec<String>,
    range_depth: usize,
    depth: usize,
    funcs: &'a dyn Fn(&str) -> bool,
    out: Vec<Tree>,
    line: usize,
    hi: usize,
    action_line: usize,
}

type PResult<T> = Result<T, Error>;

/// Parses `text` as template `name`. Returns all trees: the main one first, then any `define`/`block`.
pub(crate) fn parse(
    name: &str,
    text: &str,
    funcs: &dyn Fn(&str) -> bool,
    delims: (&str, &str),
) -> Result<Vec<Tree>, Error> {
    let items: Vec<Item> = lex(text, delims.0, delims.1)
        .into_iter()
        .filter(|i| i.t != T::Comment)
        .collect();
    let mut p = Parser {
        items,
        i: 0,
        parse_name: name.to_string(),
        text: Arc::from(text),
        vars: vec!["$".into()],
        range_depth: 0,
        depth: 0,
        funcs,
        out: Vec::new(),
        line: 1,
        hi: 0,
        action_line: 0,
    };
    let root = p.parse_top()?;
    let main = Tree {
        name: name.to_string(),
        parse_name: name.to_string(),
        text: p.text.clone(),
        root,
    };
    let mut trees = vec![main];
    trees.extend(p.out);
    Ok(trees)
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Item {
        let it = self.items.get(self.i).cloned().unwrap_or_else(|| Item {
            t: T::Eof,
            pos: self.text.len(),
            val: "".into(),
            line: self.line,
        });
        self.touch(self.i);
        if self.i < self.items.len() {
            self.i += 1;
        }
        it
    }
    fn touch(&mut self, i: usize) {
        if i >= self.hi {
            self.hi = i;
            if let Some(it) = self.items.get(i) {
                self.line = it.line;
            }
        }
    }
    fn backup(&mut self) {
        if self.i > 0 {
            self.i -= 1;
        }
    }
    fn peek(&mut self) -> Item {
        self.touch(self.i);
        self.items.get(self.i).cloned().unwrap_or_else(|| Item {
            t: T::Eof,
            pos: self.text.len(),
            val: "".into(),
            line: self.line,
        })
    }
    fn next_non_space(&mut self) -> Item {
        loop {
            let it = self.next();
            if it.t != T::Space {
                return it;
            }
        }
    }
    fn peek_non_space(&mut self) -> Item {
        let it = self.next_non_space();
        self.backup();
        it
    }

    fn errorf(&self, msg: String) -> Error {
        Error::parse(&self.parse_name, self.line, msg)
    }

    fn unexpected(&self, it: &Item, context: &str) -> Error {
        if it.t == T::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != it.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.parse_name, self.action_line
                );
                if it.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return Error::parse(&self.parse_name, it.line, format!("{}{}", it.val, extra));
        }
        self.errorf(format!("unexpected {} in {}", it.describe(), context))
    }

    fn expect(&mut self, t: T, context: &str) -> PResult<Item> {
        let it = self.next_non_space();
        if it.t != t {
            return Err(self.unexpected(&it, context));
        }
        Ok(it)
    }

    fn parse_top(&mut self) -> PResult<Vec<Node>> {
        let mut root = Vec::new();
        while self.peek().t != T::Eof {
            if self.peek().t == T::LeftDelim {
                let save = self.i;
                self.next();
                if self.next_non_space().t == T::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.i = save;
            }
            match self.text_or_action()? {
                Parsed::Node(n) => root.push(n),
                Parsed::End => return Err(self.errorf("unexpected {{end}}".into())),
                Parsed::Else => return Err(self.errorf("unexpected {{else}}".into())),
            }
        }
        Ok(root)
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let it = self.next_non_space();
        let name = match it.t {
            T::Str | T::RawStr => self.unquote(&it)?,
            _ => return Err(self.unexpected(&it, context)),
        };
        self.expect(T::RightDelim, context)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        if let End::Else = end {
            return Err(self.errorf(format!("unexpected {{{{else}}}} in {context}")));
        }
        self.add_tree(Tree {
            name,
            parse_name: self.parse_name.clone(),
            text: self.text.clone(),
            root: list,
        })
    }

    /// Go's Tree.add: a second non-empty definition of a name in one Parse call is an error.
    fn add_tree(&mut self, t: Tree) -> PResult<()> {
        if let Some(k) = self.out.iter().position(|o| o.name == t.name) {
            if t.is_empty() {
                return Ok(());
            }
            if !self.out[k].is_empty() {
                return Err(self.errorf(format!(
                    "template: multiple definition of template {}",
                    go_quote(&t.name)
                )));
            }
            self.out[k] = t;
            return Ok(());
        }
        self.out.push(t);
        Ok(())
    }

    fn item_list(&mut self) -> PResult<(Vec<Node>, End)> {
        let mut list = Vec::new();
        while self.peek_non_space().t != T::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.push(n),
                Parsed::End => return Ok((list, End::End)),
                Parsed::Else => return Ok((list, End::Else)),
            }
        }
        Err(self.errorf("unexpected EOF".into()))
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let it = self.next_non_space();
        match it.t {
            T::Text => Ok(Parsed::Node(Node::Text {
                text: it.val.to_string(),
            })),
            T::LeftDelim => {
                let saved = self.action_line;
                self.action_line = it.line;
                let r = self.action();
                self.action_line = saved;
                r
            }
            _ => Err(self.unexpected(&it, "input")),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.errorf("max nesting depth exceeded".into()));
        }
        Ok(())
    }

    fn action(&mut self) -> PResult<Parsed> {
        let it = self.next_non_space();
        match it.t {
            T::Block => return self.block_control().map(Parsed::Node),
            T::Break | T::Continue => {
                let kw = if it.t == T::Break {
                    "break"
                } else {
                    "continue"
                };
                let tok = self.next_non_space();
                if tok.t != T::RightDelim {
                    return Err(self.unexpected(&tok, &format!("{{{{{kw}}}}}")));
                }
                if self.range_depth == 0 {
                    return Err(self.errorf(format!("{{{{{kw}}}}} outside {{{{range}}}}")));
                }
                return Ok(Parsed::Node(if it.t == T::Break {
                    Node::Break
                } else {
                    Node::Continue
                }));
            }
            T::Else => {
                let peek = self.peek_non_space();
                if peek.t == T::If || peek.t == T::With {
                    return Ok(Parsed::Else);
                }
                let tok = self.expect(T::RightDelim, "else")?;
                let _ = tok;
                return Ok(Parsed::Else);
            }
            T::End => {
                let tok = self.expect(T::RightDelim, "end")?;
                let _ = tok;
                return Ok(Parsed::End);
            }
            T::If => return self.control("if").map(Parsed::Node),
            T::Range => return self.control("range").map(Parsed::Node),
            T::With => return self.control("with").map(Parsed::Node),
            T::Template => return self.template_control().map(Parsed::Node),
            _ => {}
        }
        self.backup();
        let pipe = self.pipeline("command", T::RightDelim)?;
        Ok(Parsed::Node(Node::Action { pipe }))
    }

    fn control(&mut self, context: &str) -> PResult<Node> {
        self.enter()?;
        let nvars = self.vars.len();
        let pipe = self.pipeline(context, T::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, end) = r?;
        let mut else_list = None;
        if let End::Else = end {
            let pk = self.peek();
            if (context == "if" && pk.t == T::If) || (context == "with" && pk.t == T::With) {
                self.next();
                let inner = self.control(context)?;
                else_list = Some(vec![inner]);
            } else {
                let (el, end2) = self.item_list()?;
                if let End::Else = end2 {
                    return Err(self.errorf("expected end; found {{else}}".into()));
                }
                else_list = Some(el);
            }
        }
        self.vars.truncate(nvars);
        self.depth -= 1;
        Ok(match context {
            "if" => Node::If {
                pipe,
                list,
                else_list,
            },
            "with" => Node::With {
                pipe,
                list,
                else_list,
            },
            _ => Node::Range {
                pipe,
                list,
                else_list,
            },
        })
    }

    fn template_name(&mut self, it: &Item, context: &str) -> PResult<String> {
        match it.t {
            T::Str | T::RawStr => self.unquote(it),
            _ => Err(self.unexpected(it, context)),
        }
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, context)?;
        let mut pipe = None;
        if self.next_non_space().t != T::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, T::RightDelim)?);
        }
        Ok(Node::Template {
            pos: tok.pos,
            name,
            pipe,
        })
    }

    fn block_control(&mut self) -> PResult<Node> {
        self.enter()?;
        let context = "block clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, context)?;
        let pipe = self.pipeline(context, T::RightDelim)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let r = self.item_list();
        self.vars = saved_vars;
        self.range_depth = saved_range;
        let (list, end) = r?;
        if let End::Else = end {
            return Err(self.errorf(format!("unexpected {{{{else}}}} in {context}")));
        }
        self.add_tree(Tree {
            name: name.clone(),
            parse_name: self.parse_name.clone(),
            text: self.text.clone(),
            root: list,
        })?;
        self.depth -= 1;
        Ok(Node::Template {
            pos: tok.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn pipeline(&mut self, context: &str, end: T) -> PResult<Pipe> {
        self.enter()?;
        let tok = self.peek_non_space();
        let mut pipe = Pipe {
            pos: tok.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        'decls: loop {
            let v = self.peek_non_space();
            if v.t != T::Variable {
                break;
            }
            let save = self.i;
            self.next_non_space();
            let after = self.peek();
            let next = self.peek_non_space();
            if next.t == T::Assign || next.t == T::Declare {
                pipe.is_assign = next.t == T::Assign;
                self.next_non_space();
                pipe.decl.push((v.val.to_string(), v.pos));
                self.vars.push(v.val.to_string());
            } else if next.t == T::Char && &*next.val == "," {
                self.next_non_space();
                pipe.decl.push((v.val.to_string(), v.pos));
                self.vars.push(v.val.to_string());
                if context == "range" && pipe.decl.len() < 2 {
                    match self.peek_non_space().t {
                        T::Variable | T::RightDelim | T::RightParen => continue 'decls,
                        _ => return Err(self.errorf("range can only initialize variables".into())),
                    }
                }
                return Err(self.errorf(format!("too many declarations in {context}")));
            } else {
                let _ = after;
                self.i = save;
            }
            break;
        }
        loop {
            let tok = self.next_non_space();
            if tok.t == end {
                self.check_pipeline(&pipe, context)?;
                self.depth -= 1;
                return Ok(pipe);
            }
            match tok.t {
                T::Bool
                | T::CharConst
                | T::Dot
                | T::Field
                | T::Identifier
                | T::Number
                | T::Nil
                | T::RawStr
                | T::Str
                | T::Variable
                | T::LeftParen => {
                    self.backup();
                    let c = self.command()?;
                    pipe.cmds.push(c);
                }
                _ => return Err(self.unexpected(&tok, context)),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return Err(self.errorf(format!("missing value for {context}")));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if let Some(
                Arg::Bool { .. }
                | Arg::Dot { .. }
                | Arg::Nil { .. }
                | Arg::Number { .. }
                | Arg::Str { .. },
            ) = c.args.first()
            {
                return Err(self.errorf(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        let mut cmd = Command {
            pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                cmd.args.push(op);
            }
            let tok = self.next();
            match tok.t {
                T::Space => continue,
                T::RightDelim | T::RightParen => self.backup(),
                T::Pipe => {}
                _ => return Err(self.unexpected(&tok, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.errorf("empty command".into()));
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().t == T::Field {
            let chain_pos = self.peek().pos;
            let mut fields = Vec::new();
            while self.peek().t == T::Field {
                let f = self.next();
                fields.push(f.val.trim_start_matches('.').to_string());
            }
            return Ok(Some(match node {
                Arg::Field { mut idents, .. } => {
                    idents.extend(fields);
                    Arg::Field {
                        pos: chain_pos,
                        idents,
                    }
                }
                Arg::Variable {
                    name,
                    fields: mut f0,
                    ..
                } => {
                    f0.extend(fields);
                    Arg::Variable {
                        pos: chain_pos,
                        name,
                        fields: f0,
                    }
                }
                Arg::Bool { .. }
                | Arg::Str { .. }
                | Arg::Number { .. }
                | Arg::Nil { .. }
                | Arg::Dot { .. } => {
                    return Err(self.errorf(format!(
                        "unexpected . after term {}",
                        go_quote(&node.text())
                    )));
                }
                other => Arg::Chain {
                    pos: chain_pos,
                    node: Box::new(other),
                    fields,
                },
            }));
        }
        Ok(Some(node))
    }

    fn unquote(&self, it: &Item) -> PResult<String> {
        unquote(&it.val).ok_or_else(|| self.errorf("invalid syntax".into()))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let tok = self.next_non_space();
        Ok(Some(match tok.t {
            T::Identifier => {
                if !(self.funcs)(&tok.val) {
                    return Err(self.errorf(format!("function {} not defined", go_quote(&tok.val))));
                }
                Arg::Identifier {
                    pos: tok.pos,
                    name: tok.val.to_string(),
                }
            }
            T::Dot => Arg::Dot { pos: tok.pos },
            T::Nil => Arg::Nil { pos: tok.pos },
            T::Variable => {
                let mut parts = tok.val.split('.');
                let name = parts.next().unwrap_or("").to_string();
                if !self.vars.contains(&name) {
                    return Err(self.errorf(format!("undefined variable {}", go_quote(&name))));
                }
                Arg::Variable {
                    pos: tok.pos,
                    name,
                    fields: parts.map(|s| s.to_string()).collect(),
                }
            }
            T::Field => Arg::Field {
                pos: tok.pos,
                idents: tok
                    .val
                    .split('.')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.to_string())
                    .collect(),
            },
            T::Bool => Arg::Bool {
                pos: tok.pos,
                val: &*tok.val == "true",
            },
            T::CharConst | T::Number => {
                let num =
                    parse_number(&tok.val, tok.t == T::CharConst).map_err(|m| self.errorf(m))?;
                Arg::Number {
                    pos: tok.pos,
                    text: tok.val.to_string(),
                    num,
                }
            }
            T::LeftParen => {
                let p = self.pipeline("parenthesized pipeline", T::RightParen)?;
                Arg::Pipe(Box::new(p))
            }
            T::Str | T::RawStr => {
                let s = self.unquote(&tok)?;
                Arg::Str {
                    pos: tok.pos,
                    quoted: tok.val.to_string(),
                    val: Arc::from(s),
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

enum Parsed {
    Node(Node),
    End,
    Else,
}

/// Go's strconv.Unquote for "..." , `...` and '...'.
pub(crate) fn unquote(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 2 {
        return None;
    }
    let q = b[0];
    if b[b.len() - 1] != q {
        return None;
    }
    let inner = &s[1..s.len() - 1];
    if q == b'`' {
        if inner.contains('`') {
            return None;
        }
        return Some(inner.replace('\r', ""));
    }
    if q != b'"' && q != b'\'' {
        return None;
    }
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    let mut count = 0;
    while let Some(c) = chars.next() {
        count += 1;
        if c == q as char {
            return None;
        }
        if c == '\n' {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            '\'' if q == b'\'' => out.push('\''),
            '"' if q == b'"' => out.push('"'),
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                for _ in 0..n {
                    let d = chars.next()?.to_digit(16)?;
                    v = v * 16 + d;
                }
                // \xNN above 0x7F is a raw byte in Go; strings here are UTF-8, so it becomes
                // the code point of the same value.
                out.push(char::from_u32(v)?);
            }
            '0'..='7' => {
                let mut v: u32 = e.to_digit(8)?;
                for _ in 0..2 {
                    v = v * 8 + chars.next()?.to_digit(8)?;
                }
                if v > 255 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    if q == b'\'' && count == 0 {
        return None;
    }
    if q == b'\'' && out.chars().count() != 1 {
        return None;
    }
    Some(out)
}

/// Parses a Go number literal the way parse.newNumber does.
fn parse_number(text: &str, is_char: bool) -> Result<Num, String> {
    if is_char {
        let s = unquote(text).ok_or_else(|| format!("malformed character constant: {text}"))?;
        let c = s
            .chars()
            .next()
            .ok_or_else(|| format!("malformed character constant: {text}"))?;
        return Ok(Num {
            int: Some(c as i64),
            float: Some(c as u32 as f64),
            float_syntax: false,
        });
    }
    if text.ends_with('i') {
        return Err(format!("complex numbers are not supported: {text}"));
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match clean.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, clean.trim_start_matches('+').to_string()),
    };
    let lower = body.to_ascii_lowercase();
    let is_hex = lower.starts_with("0x");
    let mut int = None;
    let parsed_int = if is_hex {
        u64::from_str_radix(&lower[2..], 16).ok()
    } else if let Some(r) = lower.strip_prefix("0b") {
        u64::from_str_radix(r, 2).ok()
    } else if let Some(r) = lower.strip_prefix("0o") {
        u64::from_str_radix(r, 8).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit())
    {
        u64::from_str_radix(&lower[1..], 8).ok()
    } else {
        lower.parse::<u64>().ok()
    };
    if let Some(u) = parsed_int {
        if neg {
            if u <= (i64::MAX as u64) + 1 {
                int = Some(-(u as i128) as i64);
            }
        } else if u <= i64::MAX as u64 {
            int = Some(u as i64);
        }
    }
    let float_syntax = !is_hex && lower.contains(['.', 'e', 'p']);
    let mut float = None;
    if float_syntax {
        let f: f64 = lower
            .parse()
            .map_err(|_| format!("illegal number syntax: {}", go_quote(text)))?;
        let f = if neg { -f } else { f };
        float = Some(f);
        if int.is_none() && f.fract() == 0.0 && f.abs() < 9.2e18 {
            int = Some(f as i64);
        }
    } else if let Some(i) = int {
        float = Some(i as f64);
    } else if let Some(u) = parsed_int {
        // uint that overflows int64
        float = Some(u as f64);
    }
    if int.is_none() && float.is_none() {
        return Err(format!("illegal number syntax: {}", go_quote(text)));
    }
    Ok(Num {
        int,
        float,
        float_syntax,
    })
}

/// Converts a constant number to the value Go's idealConstant produces.
pub(crate) fn ideal_constant(num: &Num, text: &str) -> Result<Value, String> {
    if num.float_syntax {
        return Ok(Value::Float(num.float.unwrap_or(0.0)));
    }
    match num.int {
        Some(i) => Ok(Value::Int(i)),
        None => Err(format!("{text} overflows int")),
    }
}
