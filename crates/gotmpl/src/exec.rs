//! The executor: walks parsed trees the way Go's text/template `exec.go` does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Error;
use crate::funcs::{Func, Special, Ty};
use crate::lex::go_quote;
use crate::parse::{Arg, Command, Node, Pipe, Tree, ideal_constant};
use crate::value::Value;
use crate::{MissingKey, Templates};

/// Go's maxExecDepth is 100000; we keep a lower bound so hostile charts cannot exhaust memory.
const MAX_EXEC_DEPTH: usize = 10000;

/// State shared by one top-level execution (and the includes it makes).
#[derive(Default)]
pub(crate) struct Shared {
    pub include_counts: HashMap<String, usize>,
    /// Log of in-place map mutations (old map kept alive, new map), so that every frame can
    /// re-point its variables and dot like Go's shared map references would.
    pub mutations: Vec<(Value, Value)>,
}

fn map_ptr(v: &Value) -> Option<usize> {
    match v {
        Value::Map(m) => Some(Arc::as_ptr(m) as *const () as usize),
        _ => None,
    }
}

/// Replaces every occurrence of map `old` (by identity) inside `v`; parents are rebuilt and
/// memoized so that aliases of the same parent stay aliases.
fn replace_map(
    v: &Value,
    old: usize,
    new: &Value,
    memo: &mut HashMap<usize, Value>,
) -> Option<Value> {
    match v {
        Value::Map(m) => {
            let p = Arc::as_ptr(m) as *const () as usize;
            if p == old {
                return Some(new.clone());
            }
            if let Some(done) = memo.get(&p) {
                return Some(done.clone());
            }
            let mut changed: Option<std::collections::BTreeMap<String, Value>> = None;
            for (k, x) in m.iter() {
                if let Some(nx) = replace_map(x, old, new, memo) {
                    changed
                        .get_or_insert_with(|| (**m).clone())
                        .insert(k.clone(), nx);
                }
            }
            let nv = Value::Map(Arc::new(changed?));
            memo.insert(p, nv.clone());
            Some(nv)
        }
        Value::List(l) => {
            let mut changed: Option<Vec<Value>> = None;
            for (k, x) in l.iter().enumerate() {
                if let Some(nx) = replace_map(x, old, new, memo) {
                    changed.get_or_insert_with(|| (**l).clone())[k] = nx;
                }
            }
            Some(Value::List(Arc::new(changed?)))
        }
        _ => None,
    }
}

/// Context handed to template functions: access to the template set and the running execution.
pub struct Ctx<'a> {
    pub(crate) set: &'a Templates,
    pub(crate) depth: usize,
    pub(crate) shared: &'a RefCell<Shared>,
}

impl<'a> Ctx<'a> {
    /// The template set being executed.
    pub fn templates(&self) -> &Templates {
        self.set
    }

    /// Executes template `name` of the current set with `data` (what Helm's `include` does).
    pub fn execute_template(&self, name: &str, data: &Value) -> Result<String, Error> {
        let Some(tree) = self.set.trees.get(name) else {
            return Err(Error::other(
                name,
                format!(
                    "template: no template {} associated with template {}",
                    go_quote(name),
                    go_quote(&self.set.set_name)
                ),
            ));
        };
        let mut out = String::new();
        let mut st = State {
            set: self.set,
            tree: tree.clone(),
            vars: vec![("$".into(), data.clone(), false)],
            depth: self.depth + 1,
            shared: self.shared,
            applied: self.shared.borrow().mutations.len(),
        };
        if st.depth > MAX_EXEC_DEPTH {
            return Err(Error::other(
                name,
                format!("template: {name}: exceeded maximum template depth ({MAX_EXEC_DEPTH})"),
            ));
        }
        st.walk_list(data, false, &tree.root, &mut out)?;
        Ok(out)
    }

    /// Per-execution include counters (Helm's recursion guard).
    pub fn include_enter(&self, name: &str) -> usize {
        let mut s = self.shared.borrow_mut();
        let c = s.include_counts.entry(name.to_string()).or_insert(0);
        *c += 1;
        *c
    }

    /// Undo [`Ctx::include_enter`].
    pub fn include_leave(&self, name: &str) {
        let mut s = self.shared.borrow_mut();
        if let Some(c) = s.include_counts.get_mut(name) {
            *c = c.saturating_sub(1);
        }
    }

    /// Current execution depth.
    pub fn depth(&self) -> usize {
        self.depth
    }
}

/// Control flow out of a list walk.
#[derive(PartialEq, Eq)]
enum Flow {
    Normal,
    Break,
    Continue,
}

/// A receiver during field-chain evaluation: Go's invalid reflect.Value, or a value whose static
/// type is `interface {}` (map elements), or a concrete value.
#[derive(Clone)]
enum Recv {
    Invalid,
    Val(Value, bool),
}

pub(crate) struct State<'a> {
    pub set: &'a Templates,
    pub tree: Arc<Tree>,
    /// (name, value, value has static type interface{})
    pub vars: Vec<(String, Value, bool)>,
    pub depth: usize,
    pub shared: &'a RefCell<Shared>,
    /// How many entries of `shared.mutations` this frame has applied.
    pub applied: usize,
}

/// Where an error happened (Go's `s.at(node)`).
enum At<'n> {
    Arg(&'n Arg),
    Cmd(&'n Command),
    Pipe(&'n Pipe),
    Ident(usize, &'n str),
    Raw(usize, String),
}

type R<T> = Result<T, Error>;

impl<'a> State<'a> {
    fn err(&self, at: At<'_>, msg: String) -> Error {
        let (pos, ctx) = match at {
            At::Arg(a) => (a.pos(), a.text()),
            At::Cmd(c) => (c.pos, c.text()),
            At::Pipe(p) => (p.pos, p.text()),
            At::Ident(p, n) => (p, n.to_string()),
            At::Raw(p, s) => (p, s),
        };
        let (line, col) = self.tree.line_col(pos);
        Error::exec(&self.tree.parse_name, line, col, &self.tree.name, &ctx, msg)
    }

    pub fn walk_list(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        list: &[Node],
        out: &mut String,
    ) -> R<()> {
        match self.walk(dot, dot_iface, list, out)? {
            Flow::Normal | Flow::Break | Flow::Continue => Ok(()),
        }
    }

    fn walk(&mut self, dot: &Value, dot_iface: bool, list: &[Node], out: &mut String) -> R<Flow> {
        let mut dot = dot.clone();
        for node in list {
            let f = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                self.walk_node(&dot, dot_iface, node, out)
            })?;
            if self.applied < self.shared.borrow().mutations.len() {
                self.apply_mutations(Some(&mut dot));
            }
            if f != Flow::Normal {
                return Ok(f);
            }
        }
        Ok(Flow::Normal)
    }

    /// Re-points variables (and dot) at maps mutated since this frame last looked.
    fn apply_mutations(&mut self, dot: Option<&mut Value>) {
        let entries: Vec<(Value, Value)> = {
            let sh = self.shared.borrow();
            sh.mutations.get(self.applied..).unwrap_or(&[]).to_vec()
        };
        let mut dot_ref = dot;
        for (old, new) in &entries {
            let Some(op) = map_ptr(old) else { continue };
            let mut memo = HashMap::new();
            for var in self.vars.iter_mut() {
                if let Some(nv) = replace_map(&var.1, op, new, &mut memo) {
                    var.1 = nv;
                }
            }
            if let Some(d) = dot_ref.as_deref_mut()
                && let Some(nv) = replace_map(d, op, new, &mut memo)
            {
                *d = nv;
            }
        }
        self.applied += entries.len();
    }

    fn walk_node(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        node: &Node,
        out: &mut String,
    ) -> R<Flow> {
        match node {
            Node::Text { text } => out.push_str(text),
            Node::Action { pipe } => {
                let v = self.eval_pipeline(dot, dot_iface, pipe)?;
                if pipe.decl.is_empty() {
                    match v {
                        Value::Nil => out.push_str("<no value>"),
                        v => v.write_go(out),
                    }
                }
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
            Node::If {
                pipe,
                list,
                else_list,
            }
            | Node::With {
                pipe,
                list,
                else_list,
            } => {
                let is_with = matches!(node, Node::With { .. });
                let mark = self.vars.len();
                let val = self.eval_pipeline(dot, dot_iface, pipe)?;
                let truth = val.truthy();
                let r = if truth {
                    if is_with {
                        self.walk(&val, false, list, out)
                    } else {
                        self.walk(dot, dot_iface, list, out)
                    }
                } else if let Some(el) = else_list {
                    self.walk(dot, dot_iface, el, out)
                } else {
                    Ok(Flow::Normal)
                };
                self.vars.truncate(mark);
                return r;
            }
            Node::Range {
                pipe,
                list,
                else_list,
            } => {
                let mark = self.vars.len();
                let r = self.walk_range(dot, dot_iface, pipe, list, else_list.as_deref(), out);
                self.vars.truncate(mark);
                return r.map(|_| Flow::Normal);
            }
            Node::Template { pos, name, pipe } => {
                let Some(tree) = self.set.trees.get(name).cloned() else {
                    return Err(self.err(
                        At::Raw(*pos, template_ctx(name, pipe.as_ref())),
                        format!("template {} not defined", go_quote(name)),
                    ));
                };
                let new_dot = match pipe {
                    Some(p) => self.eval_pipeline(dot, dot_iface, p)?,
                    None => Value::Nil,
                };
                if self.depth + 1 > MAX_EXEC_DEPTH {
                    return Err(self.err(
                        At::Raw(*pos, template_ctx(name, pipe.as_ref())),
                        format!("exceeded maximum template depth ({MAX_EXEC_DEPTH})"),
                    ));
                }
                let mut st = State {
                    set: self.set,
                    tree: tree.clone(),
                    vars: vec![("$".into(), new_dot.clone(), false)],
                    depth: self.depth + 1,
                    shared: self.shared,
                    applied: self.shared.borrow().mutations.len(),
                };
                st.walk_list(&new_dot, false, &tree.root, out)?;
            }
        }
        Ok(Flow::Normal)
    }

    fn walk_range(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        pipe: &Pipe,
        list: &[Node],
        else_list: Option<&[Node]>,
        out: &mut String,
    ) -> R<()> {
        let val = self.eval_pipeline(dot, dot_iface, pipe)?;
        let mark = self.vars.len();
        let ndecl = pipe.decl.len();
        let iterate =
            |st: &mut Self, index: Value, elem: Value, iface: bool, out: &mut String| -> R<Flow> {
                if ndecl > 0 {
                    if pipe.is_assign {
                        if ndecl > 1 {
                            st.set_var(&pipe.decl[0].0, index.clone(), false, pipe)?;
                        } else {
                            st.set_var(&pipe.decl[0].0, elem.clone(), iface, pipe)?;
                        }
                    } else if let Some(v) = st.vars.get_mut(mark.wrapping_sub(1)) {
                        v.1 = elem.clone();
                        v.2 = iface;
                    }
                }
                if ndecl > 1 {
                    if pipe.is_assign {
                        st.set_var(&pipe.decl[1].0, elem.clone(), iface, pipe)?;
                    } else if let Some(v) = st.vars.get_mut(mark.wrapping_sub(2)) {
                        v.1 = index;
                        v.2 = false;
                    }
                }
                let r = st.walk(&elem, iface, list, out);
                st.vars.truncate(mark);
                r
            };
        match &val {
            Value::List(l) if !l.is_empty() => {
                for (i, e) in l.iter().enumerate() {
                    if iterate(self, Value::Int(i as i64), e.clone(), true, out)? == Flow::Break {
                        break;
                    }
                }
                return Ok(());
            }
            Value::Map(m) if !m.is_empty() => {
                for (k, e) in m.iter() {
                    if iterate(self, Value::str(k), e.clone(), true, out)? == Flow::Break {
                        break;
                    }
                }
                return Ok(());
            }
            Value::Int(n) | Value::Int64(n) => {
                if ndecl > 1 {
                    return Err(self.err(
                        last_at(pipe),
                        format!("can't use {n} to iterate over more than one variable"),
                    ));
                }
                // Go 1.22 ranges over an integer in that integer's own type.
                let wide = matches!(val, Value::Int64(_));
                for i in 0..(*n).max(0) {
                    let v = if wide { Value::Int64(i) } else { Value::Int(i) };
                    if iterate(self, v.clone(), v, false, out)? == Flow::Break {
                        break;
                    }
                }
                if *n > 0 {
                    return Ok(());
                }
            }
            Value::Object(o) if let Some(entries) = o.entries() => {
                // A Go map type with methods (Helm's `files`): keys in sorted order.
                let any = !entries.is_empty();
                for (k, e) in entries {
                    if iterate(self, Value::from(k), e, false, out)? == Flow::Break {
                        break;
                    }
                }
                if any {
                    return Ok(());
                }
            }
            Value::List(_) | Value::Map(_) | Value::Nil => {}
            other => {
                return Err(self.err(
                    last_at(pipe),
                    format!("range can't iterate over {}", other.to_go_string()),
                ));
            }
        }
        if let Some(el) = else_list {
            self.walk(dot, dot_iface, el, out)?;
        }
        Ok(())
    }

    fn set_var(&mut self, name: &str, v: Value, iface: bool, pipe: &Pipe) -> R<()> {
        for var in self.vars.iter_mut().rev() {
            if var.0 == name {
                var.1 = v;
                var.2 = iface;
                return Ok(());
            }
        }
        Err(self.err(At::Pipe(pipe), format!("undefined variable: {name}")))
    }

    fn var_value(&self, name: &str, pos: usize) -> R<(Value, bool)> {
        for var in self.vars.iter().rev() {
            if var.0 == name {
                return Ok((var.1.clone(), var.2));
            }
        }
        Err(self.err(
            At::Raw(pos, name.to_string()),
            format!("undefined variable: {name}"),
        ))
    }

    fn eval_pipeline(&mut self, dot: &Value, dot_iface: bool, pipe: &Pipe) -> R<Value> {
        let mut val: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, dot_iface, cmd, val.take())?;
            val = Some(v);
        }
        let v = val.unwrap_or(Value::Nil);
        for (name, _) in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, v.clone(), false, pipe)?;
            } else {
                self.vars.push((name.clone(), v.clone(), false));
            }
        }
        Ok(v)
    }

    fn not_a_function(&self, args: &[Arg], has_final: bool) -> R<()> {
        if (args.len() > 1 || has_final)
            && let Some(a) = args.first()
        {
            return Err(self.err(
                At::Arg(a),
                format!("can't give argument to non-function {}", a.text()),
            ));
        }
        Ok(())
    }

    fn eval_command(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        cmd: &Command,
        fin: Option<Value>,
    ) -> R<Value> {
        let Some(first) = cmd.args.first() else {
            return Ok(Value::Nil);
        };
        match first {
            Arg::Field { idents, .. } => {
                let recv = recv_of(dot.clone(), dot_iface);
                let r =
                    self.eval_field_chain(dot, dot_iface, recv, first, idents, &cmd.args, fin)?;
                Ok(r)
            }
            Arg::Chain { node, fields, .. } => {
                if let Arg::Nil { .. } = **node {
                    return Err(self.err(
                        At::Arg(first),
                        format!("indirection through explicit nil in {}", first.text()),
                    ));
                }
                let (v, iface) = self.eval_arg_raw(dot, dot_iface, node)?;
                self.eval_field_chain(
                    dot,
                    dot_iface,
                    recv_of(v, iface),
                    first,
                    fields,
                    &cmd.args,
                    fin,
                )
            }
            Arg::Identifier { pos, name } => {
                self.eval_function(dot, dot_iface, *pos, name, cmd, &cmd.args, fin)
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, fin.is_some())?;
                self.eval_pipeline(dot, dot_iface, p)
            }
            Arg::Variable { pos, name, fields } => {
                let (v, iface) = self.var_value(name, *pos)?;
                if fields.is_empty() {
                    self.not_a_function(&cmd.args, fin.is_some())?;
                    return Ok(v);
                }
                self.eval_field_chain(
                    dot,
                    dot_iface,
                    recv_of(v, iface),
                    first,
                    fields,
                    &cmd.args,
                    fin,
                )
            }
            _ => {
                self.not_a_function(&cmd.args, fin.is_some())?;
                match first {
                    Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
                    Arg::Dot { .. } => Ok(dot.clone()),
                    Arg::Nil { .. } => Err(self.err(At::Arg(first), "nil is not a command".into())),
                    Arg::Number { num, text, .. } => {
                        ideal_constant(num, text).map_err(|m| self.err(At::Arg(first), m))
                    }
                    Arg::Str { val, .. } => Ok(Value::String(val.clone())),
                    _ => Err(self.err(
                        At::Arg(first),
                        format!("can't evaluate command {}", first.text()),
                    )),
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_field_chain(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        mut recv: Recv,
        node: &Arg,
        idents: &[String],
        args: &[Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let n = idents.len();
        for (i, ident) in idents.iter().enumerate() {
            if i + 1 < n {
                recv = self.eval_field(dot, dot_iface, ident, node, &[], None, recv)?;
            } else {
                let fin = fin.clone();
                recv = self.eval_field(dot, dot_iface, ident, node, args, fin, recv)?;
            }
        }
        Ok(match recv {
            Recv::Invalid => Value::Nil,
            Recv::Val(v, _) => v,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_field(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        name: &str,
        node: &Arg,
        args: &[Arg],
        fin: Option<Value>,
        recv: Recv,
    ) -> R<Recv> {
        let (v, iface) = match recv {
            Recv::Invalid => {
                if self.set.missing == MissingKey::Error {
                    return Err(self.err(
                        At::Arg(node),
                        format!("nil data; no entry for key {}", go_quote(name)),
                    ));
                }
                return Ok(Recv::Invalid);
            }
            Recv::Val(v, iface) => (v, iface),
        };
        let has_args = args.len() > 1 || fin.is_some();
        match &v {
            Value::Nil => Err(self.err(
                At::Arg(node),
                format!("nil pointer evaluating interface {{}}.{name}"),
            )),
            Value::Object(o) => {
                if !has_args && let Some(f) = o.field(name) {
                    return Ok(recv_of(f, false));
                }
                let mut argv = Vec::new();
                for a in args.iter().skip(1) {
                    argv.push(self.eval_arg_raw(dot, dot_iface, a)?.0);
                }
                if let Some(f) = fin {
                    argv.push(f);
                }
                match o.call(name, &argv) {
                    Some(Ok(r)) => Ok(recv_of(r, false)),
                    Some(Err(e)) => {
                        Err(self.err(At::Arg(node), format!("error calling {name}: {e}")))
                    }
                    None => Err(self.err(
                        At::Arg(node),
                        format!("can't evaluate field {name} in type {}", o.type_name()),
                    )),
                }
            }
            Value::Map(m) => {
                if has_args {
                    return Err(self.err(
                        At::Arg(node),
                        format!("{name} is not a method but has arguments"),
                    ));
                }
                match m.get(name) {
                    Some(x) => Ok(Recv::Val(x.clone(), true)),
                    None => match self.set.missing {
                        MissingKey::Default => Ok(Recv::Invalid),
                        MissingKey::Zero => Ok(Recv::Val(Value::Nil, true)),
                        MissingKey::Error => Err(self.err(
                            At::Arg(node),
                            format!("map has no entry for key {}", go_quote(name)),
                        )),
                    },
                }
            }
            other => {
                let typ = if iface {
                    "interface {}".to_string()
                } else {
                    other.type_name()
                };
                Err(self.err(
                    At::Arg(node),
                    format!("can't evaluate field {name} in type {typ}"),
                ))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_function(
        &mut self,
        dot: &Value,
        dot_iface: bool,
        pos: usize,
        name: &str,
        cmd: &Command,
        args: &[Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let Some(func) = self.set.funcs.get(name).cloned() else {
            return Err(self.err(
                At::Ident(pos, name),
                format!("{} is not a defined function", go_quote(name)),
            ));
        };
        let call_args = args.get(1..).unwrap_or(&[]);
        let nargs = call_args.len() + usize::from(fin.is_some());
        match func.special {
            Special::And | Special::Or => {
                if nargs == 0 {
                    return Err(self.err(
                        At::Ident(pos, name),
                        format!("wrong number of args for {name}: want at least 1 got 0"),
                    ));
                }
                let is_and = func.special == Special::And;
                let mut last = Value::Nil;
                for a in call_args {
                    let v = self.eval_arg_raw(dot, dot_iface, a)?.0;
                    if v.truthy() != is_and {
                        return Ok(v);
                    }
                    last = v;
                }
                if let Some(f) = fin {
                    return Ok(f);
                }
                return Ok(last);
            }
            Special::None | Special::Mutates => {}
        }
        self.check_arity(&func, pos, name, nargs)?;
        let mut argv = Vec::with_capacity(nargs);
        for (i, a) in call_args.iter().enumerate() {
            let ty = func.param(i);
            argv.push(self.eval_arg(dot, dot_iface, a, ty)?);
        }
        if let Some(f) = fin {
            let ty = func.param(nargs - 1);
            let v = self.validate(f, false, ty, At::Cmd(cmd))?;
            argv.push(v);
        }
        let ctx_shared = self.shared;
        let mut ctx = Ctx {
            set: self.set,
            depth: self.depth,
            shared: ctx_shared,
        };
        let target = if func.special == Special::Mutates {
            argv.first().cloned()
        } else {
            None
        };
        let r = (func.f)(&mut ctx, argv)
            .map_err(|e| self.err(At::Cmd(cmd), format!("error calling {name}: {e}")))?;
        if let Some(old @ Value::Map(_)) = target
            && matches!(r, Value::Map(_))
        {
            self.shared.borrow_mut().mutations.push((old, r.clone()));
        }
        Ok(r)
    }

    fn check_arity(&self, func: &Func, pos: usize, name: &str, n: usize) -> R<()> {
        let want = func.params.len();
        if func.variadic.is_some() {
            if n < want {
                return Err(self.err(
                    At::Ident(pos, name),
                    format!("wrong number of args for {name}: want at least {want} got {n}"),
                ));
            }
        } else if n != want {
            return Err(self.err(
                At::Ident(pos, name),
                format!("wrong number of args for {name}: want {want} got {n}"),
            ));
        }
        Ok(())
    }

    /// Evaluates an argument without a target type (interface{}), returning its iface-ness.
    fn eval_arg_raw(&mut self, dot: &Value, dot_iface: bool, a: &Arg) -> R<(Value, bool)> {
        match a {
            Arg::Dot { .. } => Ok((dot.clone(), dot_iface)),
            Arg::Nil { .. } => Ok((Value::Nil, false)),
            Arg::Field { idents, .. } => {
                let recv = recv_of(dot.clone(), dot_iface);
                let mut r = recv;
                for id in idents {
                    r = self.eval_field(dot, dot_iface, id, a, &[], None, r)?;
                }
                Ok(match r {
                    Recv::Invalid => (Value::Nil, false),
                    Recv::Val(v, i) => (v, i),
                })
            }
            Arg::Variable { pos, name, fields } => {
                let (v, iface) = self.var_value(name, *pos)?;
                let mut r = recv_of(v, iface);
                for id in fields {
                    r = self.eval_field(dot, dot_iface, id, a, &[], None, r)?;
                }
                Ok(match r {
                    Recv::Invalid => (Value::Nil, false),
                    Recv::Val(v, i) => (v, i),
                })
            }
            Arg::Chain { node, fields, .. } => {
                if let Arg::Nil { .. } = **node {
                    return Err(self.err(
                        At::Arg(a),
                        format!("indirection through explicit nil in {}", a.text()),
                    ));
                }
                let (v, iface) = self.eval_arg_raw(dot, dot_iface, node)?;
                let mut r = recv_of(v, iface);
                for id in fields {
                    r = self.eval_field(dot, dot_iface, id, a, &[], None, r)?;
                }
                Ok(match r {
                    Recv::Invalid => (Value::Nil, false),
                    Recv::Val(v, i) => (v, i),
                })
            }
            Arg::Pipe(p) => Ok((self.eval_pipeline(dot, dot_iface, p)?, false)),
            Arg::Identifier { pos, name } => {
                let cmd = Command {
                    pos: *pos,
                    args: vec![a.clone()],
                };
                Ok((
                    self.eval_function(dot, dot_iface, *pos, name, &cmd, &cmd.args, None)?,
                    false,
                ))
            }
            Arg::Bool { val, .. } => Ok((Value::Bool(*val), false)),
            Arg::Number { num, text, .. } => Ok((
                ideal_constant(num, text).map_err(|m| self.err(At::Arg(a), m))?,
                false,
            )),
            Arg::Str { val, .. } => Ok((Value::String(val.clone()), false)),
        }
    }

    /// Evaluates an argument for a parameter of type `ty` (Go's evalArg).
    fn eval_arg(&mut self, dot: &Value, dot_iface: bool, a: &Arg, ty: Ty) -> R<Value> {
        match a {
            Arg::Nil { .. } => {
                if ty.can_be_nil() {
                    return Ok(Value::Nil);
                }
                return Err(self.err(At::Arg(a), format!("cannot assign nil to {}", ty.go_name())));
            }
            Arg::Bool { val, .. } => {
                return match ty {
                    Ty::Any | Ty::Bool => Ok(Value::Bool(*val)),
                    _ => Err(self.const_mismatch(a, ty)),
                };
            }
            Arg::Number { num, text, .. } => {
                return match ty {
                    Ty::Any => ideal_constant(num, text).map_err(|m| self.err(At::Arg(a), m)),
                    Ty::Int => match num.int {
                        Some(i)
                            if !num.float_syntax || num.float.is_some_and(|f| f.fract() == 0.0) =>
                        {
                            Ok(Value::Int(i))
                        }
                        _ => Err(self.err(At::Arg(a), format!("expected integer; found {text}"))),
                    },
                    Ty::Float => match num.float {
                        Some(f) => Ok(Value::Float(f)),
                        None => Err(self.err(At::Arg(a), format!("expected float; found {text}"))),
                    },
                    _ => Err(self.const_mismatch(a, ty)),
                };
            }
            Arg::Str { val, .. } => {
                return match ty {
                    Ty::Any | Ty::Str => Ok(Value::String(val.clone())),
                    _ => Err(self.const_mismatch(a, ty)),
                };
            }
            _ => {}
        }
        let (v, iface) = self.eval_arg_raw(dot, dot_iface, a)?;
        self.validate(v, iface, ty, At::Arg(a))
    }

    fn const_mismatch(&self, a: &Arg, ty: Ty) -> Error {
        let s = a.text();
        let msg = match ty {
            Ty::Bool => format!("expected bool; found {s}"),
            Ty::Int => format!("expected integer; found {s}"),
            Ty::Float => format!("expected float; found {s}"),
            Ty::Str => format!("expected string; found {s}"),
            _ => format!("can't handle {s} for arg of type {}", ty.go_name()),
        };
        self.err(At::Arg(a), msg)
    }

    /// Go's validateType: checks a computed value against a parameter type.
    fn validate(&self, v: Value, iface: bool, ty: Ty, at: At<'_>) -> R<Value> {
        let ok = match (&v, ty) {
            (_, Ty::Any) => return Ok(v),
            (Value::Nil, t) => {
                if t.can_be_nil() {
                    return Ok(v);
                }
                let msg = if iface {
                    format!(
                        "wrong type for value; expected {}; got interface {{}}",
                        t.go_name()
                    )
                } else {
                    format!("invalid value; expected {}", t.go_name())
                };
                return Err(self.err(at, msg));
            }
            (Value::String(_), Ty::Str) => true,
            (Value::Int(_), Ty::Int) => true,
            (Value::Float(_), Ty::Float) => true,
            (Value::Bool(_), Ty::Bool) => true,
            (Value::List(_), Ty::List) => true,
            (Value::Map(_), Ty::Map) => true,
            (Value::Map(_), Ty::Values) => true,
            _ => false,
        };
        if ok {
            return Ok(v);
        }
        Err(self.err(
            at,
            format!(
                "wrong type for value; expected {}; got {}",
                ty.go_name(),
                v.type_name()
            ),
        ))
    }
}

fn recv_of(v: Value, iface: bool) -> Recv {
    match v {
        Value::Nil if !iface => Recv::Invalid,
        v => Recv::Val(v, iface),
    }
}

fn template_ctx(name: &str, pipe: Option<&Pipe>) -> String {
    match pipe {
        Some(p) => format!("{{{{template {} {}}}}}", go_quote(name), p.text()),
        None => format!("{{{{template {}}}}}", go_quote(name)),
    }
}

/// The node Go's executor last visited after evaluating `pipe` (its `s.node`), which is where
/// errors raised by range/if after the pipeline point.
fn last_at(pipe: &Pipe) -> At<'_> {
    match pipe.cmds.last() {
        Some(c) => last_at_cmd(c),
        None => At::Pipe(pipe),
    }
}

fn last_at_cmd(c: &Command) -> At<'_> {
    match c.args.first() {
        Some(Arg::Identifier { pos, name }) => match c.args.last() {
            Some(a) if c.args.len() > 1 => last_at_arg(a),
            _ => At::Ident(*pos, name),
        },
        Some(a) => last_at_arg(a),
        None => At::Cmd(c),
    }
}

fn last_at_arg(a: &Arg) -> At<'_> {
    match a {
        Arg::Pipe(p) => last_at(p),
        other => At::Arg(other),
    }
}
