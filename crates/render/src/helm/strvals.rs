//! `--set`, `--set-string` and `--set-file` parsing, following Helm's `strvals` package rule for
//! rule so that the same command line gives the same values (including its typing: `--set`
//! integers are `int64`, `true`/`false`/`null` are recognised case-insensitively, and a leading
//! `0` keeps a number a string).

use serde_json::{Map, Number, Value};

message_error! {
    /// A `--set` / `--set-string` / `--set-file` argument Helm's `strvals` would refuse.
    SetError
}

/// The largest list index accepted; larger ones are refused instead of allocating huge lists.
pub const MAX_INDEX: usize = 65536;

/// Turns the raw text of a value into a value: typed (`--set`), string (`--set-string`) or a
/// file's content (`--set-file`).
type Reader<'a> = dyn FnMut(&str) -> Result<Value, String> + 'a;

/// Parses one `--set` argument (`a.b=1,c[0]=x`) into `dest`.
pub fn parse_into(s: &str, dest: &mut Map<String, Value>) -> Result<(), SetError> {
    let mut reader = |rs: &str| Ok(typed_val(rs, false));
    Ok(Parser::new(s, &mut reader).parse(dest)?)
}

/// Parses one `--set-string` argument into `dest`; every value stays a string.
pub fn parse_into_string(s: &str, dest: &mut Map<String, Value>) -> Result<(), SetError> {
    let mut reader = |rs: &str| Ok(typed_val(rs, true));
    Ok(Parser::new(s, &mut reader).parse(dest)?)
}

/// Parses one `--set-file` argument into `dest`; each value names a file whose content
/// becomes the (string) value. `read` loads a file.
pub fn parse_into_file(
    s: &str,
    dest: &mut Map<String, Value>,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<(), String> {
    let mut reader = |rs: &str| read(rs).map(Value::String);
    Parser::new(s, &mut reader).parse(dest)
}

/// Helm's `typedVal`: the type a `--set` value gets.
pub fn typed_val(v: &str, st: bool) -> Value {
    if st {
        return Value::String(v.to_string());
    }
    if v.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if v.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if v.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if v == "0" {
        return Value::Number(Number::from(0i64));
    }
    if !v.is_empty()
        && !v.starts_with('0')
        && let Some(i) = parse_go_int(v)
    {
        return Value::Number(Number::from(i));
    }
    Value::String(v.to_string())
}

/// `strconv.ParseInt(v, 10, 64)`: optional sign, ASCII digits only.
fn parse_go_int(v: &str) -> Option<i64> {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<i64>().ok()
}

/// Why a read stopped.
#[derive(Debug, PartialEq)]
enum Stop {
    /// A stop character was found (and consumed).
    At(char),
    /// The input ended.
    Eof,
}

/// The parse result of a value list, mirroring Go's `valList` errors.
enum ListResult {
    List(Vec<Value>),
    Eof,
    NotList,
}

struct Parser<'r, 'a> {
    chars: Vec<char>,
    pos: usize,
    reader: &'r mut Reader<'a>,
}

/// Internal error: Go's `io.EOF` (a normal end) or a real message.
enum Err {
    Eof,
    Msg(String),
}

impl From<String> for Err {
    fn from(s: String) -> Self {
        Err::Msg(s)
    }
}

impl<'r, 'a> Parser<'r, 'a> {
    fn new(s: &str, reader: &'r mut Reader<'a>) -> Self {
        Parser {
            chars: s.chars().collect(),
            pos: 0,
            reader,
        }
    }

    fn parse(&mut self, data: &mut Map<String, Value>) -> Result<(), String> {
        loop {
            match self.key(data) {
                Ok(()) => continue,
                Err(Err::Eof) => return Ok(()),
                Err(Err::Msg(m)) => return Err(m),
            }
        }
    }

    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// Reads until one of `stop` (consumed), honouring `\` escapes.
    fn runes_until(&mut self, stop: &[char]) -> (String, Stop) {
        let mut v = String::new();
        loop {
            match self.read() {
                None => return (v, Stop::Eof),
                Some(c) if stop.contains(&c) => return (v, Stop::At(c)),
                Some('\\') => match self.read() {
                    None => return (v, Stop::Eof),
                    Some(n) => v.push(n),
                },
                Some(c) => v.push(c),
            }
        }
    }

    fn key(&mut self, data: &mut Map<String, Value>) -> Result<(), Err> {
        let (k, last) = self.runes_until(&['=', '[', ',', '.']);
        match last {
            Stop::Eof => {
                if k.is_empty() {
                    return Err(Err::Eof);
                }
                Err(Err::Msg(format!("key {k:?} has no value")))
            }
            Stop::At('[') => {
                let i = self
                    .key_index()
                    .map_err(|e| Err::Msg(format!("error parsing index: {e}")))?;
                let list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Value::Array(a)) => a.clone(),
                    Some(other) => {
                        return Err(Err::Msg(format!(
                            "unable to parse key: interface conversion: interface {{}} is {}, not []interface {{}}",
                            go_type_name(other)
                        )));
                    }
                };
                let (list, res) = self.list_item(list, i);
                set(data, &k, Value::Array(list));
                res
            }
            Stop::At('=') => match self.val_list()? {
                ListResult::List(vl) => {
                    set(data, &k, Value::Array(vl));
                    Ok(())
                }
                ListResult::Eof => {
                    set(data, &k, Value::String(String::new()));
                    Err(Err::Eof)
                }
                ListResult::NotList => {
                    let rs = self.val();
                    let v = (self.reader)(&rs)?;
                    set(data, &k, v);
                    Ok(())
                }
            },
            Stop::At(',') => {
                set(data, &k, Value::String(String::new()));
                Err(Err::Msg(format!(
                    "key {k:?} has no value (cannot end with ,)"
                )))
            }
            Stop::At(_) => {
                // '.'
                let mut inner = match data.get(&k) {
                    None => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    Some(other) => {
                        return Err(Err::Msg(format!(
                            "unable to parse key: interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                            go_type_name(other)
                        )));
                    }
                };
                let e = self.key(&mut inner);
                if inner.is_empty() {
                    return Err(Err::Msg(format!("key map {k:?} has no value")));
                }
                set(data, &k, Value::Object(inner));
                e
            }
        }
    }

    fn key_index(&mut self) -> Result<i64, String> {
        let (v, last) = self.runes_until(&[']']);
        if last == Stop::Eof {
            return Err("EOF".to_string());
        }
        parse_go_int(&v).ok_or_else(|| format!("strconv.Atoi: parsing {v:?}: invalid syntax"))
    }

    fn list_item(&mut self, mut list: Vec<Value>, i: i64) -> (Vec<Value>, Result<(), Err>) {
        if i < 0 {
            return (
                list,
                Err(Err::Msg(format!("negative {i} index not allowed"))),
            );
        }
        let (k, last) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            return (
                list,
                Err(Err::Msg(format!(
                    "unexpected data at end of array index: {k:?}"
                ))),
            );
        }
        match last {
            Stop::Eof => (list, Err(Err::Eof)),
            Stop::At('=') => {
                let v = match self.val_list() {
                    Err(e) => return (list, Err(e)),
                    Ok(ListResult::List(vl)) => Value::Array(vl),
                    Ok(ListResult::Eof) => Value::String(String::new()),
                    Ok(ListResult::NotList) => {
                        let rs = self.val();
                        match (self.reader)(&rs) {
                            Ok(v) => v,
                            Err(e) => return (list, Err(Err::Msg(e))),
                        }
                    }
                };
                set_index(list, i, v)
            }
            Stop::At('[') => {
                let next_i = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => return (list, Err(Err::Msg(format!("error parsing index: {e}")))),
                };
                let cur = match usize::try_from(i).ok().and_then(|ix| list.get(ix)) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) => a.clone(),
                    Some(other) => {
                        let msg = format!(
                            "unable to parse key: interface conversion: interface {{}} is {}, not []interface {{}}",
                            go_type_name(other)
                        );
                        return (list, Err(Err::Msg(msg)));
                    }
                };
                let (list2, res) = self.list_item(cur, next_i);
                if res.is_err() {
                    return (list, res);
                }
                set_index(list, i, Value::Array(list2))
            }
            Stop::At(_) => {
                // '.'
                let ix = usize::try_from(i).unwrap_or(usize::MAX);
                let mut inner = Map::new();
                if let Some(slot) = list.get_mut(ix) {
                    match slot {
                        Value::Object(m) => inner = m.clone(),
                        _ => *slot = Value::Object(Map::new()),
                    }
                }
                if let Err(e) = self.key(&mut inner) {
                    return (list, Err(e));
                }
                set_index(list, i, Value::Object(inner))
            }
        }
    }

    fn val(&mut self) -> String {
        self.runes_until(&[',']).0
    }

    fn val_list(&mut self) -> Result<ListResult, Err> {
        match self.read() {
            None => return Ok(ListResult::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread();
                return Ok(ListResult::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.runes_until(&[',', '}']);
            match last {
                Stop::Eof => return Err(Err::Msg("list must terminate with '}'".to_string())),
                Stop::At('}') => {
                    match self.read() {
                        Some(',') | None => {}
                        Some(_) => self.unread(),
                    }
                    let v = (self.reader)(&rs)?;
                    list.push(v);
                    return Ok(ListResult::List(list));
                }
                Stop::At(_) => {
                    let v = (self.reader)(&rs)?;
                    list.push(v);
                }
            }
        }
    }
}

fn set(data: &mut Map<String, Value>, key: &str, val: Value) {
    if key.is_empty() {
        return;
    }
    data.insert(key.to_string(), val);
}

fn set_index(mut list: Vec<Value>, index: i64, val: Value) -> (Vec<Value>, Result<(), Err>) {
    let ix = match usize::try_from(index) {
        Ok(ix) => ix,
        Err(_) => {
            return (
                list,
                Err(Err::Msg(format!("negative {index} index not allowed"))),
            );
        }
    };
    if ix > MAX_INDEX {
        return (
            list,
            Err(Err::Msg(format!(
                "index of {ix} is greater than maximum supported index of {MAX_INDEX}"
            ))),
        );
    }
    if list.len() <= ix {
        list.resize(ix + 1, Value::Null);
    }
    list[ix] = val;
    (list, Ok(()))
}

/// The Go dynamic type name of a value, for Helm's interface-conversion messages.
fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Result<Value, String> {
        let mut m = Map::new();
        parse_into(s, &mut m)
            .map(|_| Value::Object(m))
            .map_err(|e| e.0)
    }

    #[test]
    fn helm_parser_cases() {
        assert_eq!(p("name=value").unwrap(), json!({"name": "value"}));
        assert_eq!(
            p("long_int_string=1234567890").unwrap(),
            json!({"long_int_string": 1234567890i64})
        );
        assert_eq!(p("boolean=true").unwrap(), json!({"boolean": true}));
        assert_eq!(p("is_null=null").unwrap(), json!({"is_null": null}));
        assert_eq!(p("zero=0").unwrap(), json!({"zero": 0}));
        assert_eq!(
            p("leading_zeros=00009").unwrap(),
            json!({"leading_zeros": "00009"})
        );
        assert_eq!(
            p("name1=value1,name2=value2").unwrap(),
            json!({"name1": "value1", "name2": "value2"})
        );
        assert_eq!(
            p("name1=value1,name2=value2,").unwrap(),
            json!({"name1": "value1", "name2": "value2"})
        );
        assert_eq!(
            p("outer.inner=value").unwrap(),
            json!({"outer": {"inner": "value"}})
        );
        assert_eq!(
            p("outer.middle.inner=value").unwrap(),
            json!({"outer": {"middle": {"inner": "value"}}})
        );
        assert_eq!(
            p("outer.inner1=value,outer.inner2=value2").unwrap(),
            json!({"outer": {"inner1": "value", "inner2": "value2"}})
        );
        assert_eq!(p("name1.name2=").unwrap(), json!({"name1": {"name2": ""}}));
        assert_eq!(p("name1=").unwrap(), json!({"name1": ""}));
        assert_eq!(
            p("name1={value1,value2}").unwrap(),
            json!({"name1": ["value1", "value2"]})
        );
        assert_eq!(
            p("name1={value1,value2},name2={value1,value2}").unwrap(),
            json!({"name1": ["value1", "value2"], "name2": ["value1", "value2"]})
        );
        assert_eq!(p("list[0]=foo").unwrap(), json!({"list": ["foo"]}));
        assert_eq!(
            p("list[0].foo=bar").unwrap(),
            json!({"list": [{"foo": "bar"}]})
        );
        assert_eq!(
            p("list[0].foo=bar,list[0].hello=world").unwrap(),
            json!({"list": [{"foo": "bar", "hello": "world"}]})
        );
        assert_eq!(
            p("list[0]=foo,list[1]=bar").unwrap(),
            json!({"list": ["foo", "bar"]})
        );
        assert_eq!(
            p("list[0]=foo,list[3]=bar").unwrap(),
            json!({"list": ["foo", null, null, "bar"]})
        );
        assert_eq!(
            p("list[0][0]=a,list[0][1]=b").unwrap(),
            json!({"list": [["a", "b"]]})
        );
        assert!(p("illegal[0]name.foo=bar").is_err());
        assert_eq!(p("noval[0]").unwrap(), json!({"noval": []}));
        assert_eq!(p("a.b\\.c=d").unwrap(), json!({"a": {"b.c": "d"}}));
        assert_eq!(p("x=a\\,b").unwrap(), json!({"x": "a,b"}));
        assert_eq!(
            p("name=value,name=other").unwrap(),
            json!({"name": "other"})
        );
    }

    #[test]
    fn helm_parser_errors() {
        assert_eq!(p("name").unwrap_err(), "key \"name\" has no value");
        assert_eq!(
            p("name1,name2=").unwrap_err(),
            "key \"name1\" has no value (cannot end with ,)"
        );
        assert!(p("name1.=name2").unwrap_err().contains("has no value"));
        assert!(p("name1={value1,value2").unwrap_err().contains("terminate"));
        assert!(p("list[-1]=x").unwrap_err().contains("negative"));
        assert!(p("list[x]=x").unwrap_err().contains("error parsing index"));
        assert!(p("list[99999999]=x").unwrap_err().contains("maximum"));
        assert!(p("a=1,a.b=2").unwrap_err().contains("interface conversion"));
        assert!(
            p("a=1,a[0]=2")
                .unwrap_err()
                .contains("interface conversion")
        );
    }

    #[test]
    fn set_string_keeps_strings() {
        let mut m = Map::new();
        parse_into_string("a=true,b=1,c=null", &mut m).unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"a": "true", "b": "1", "c": "null"})
        );
    }

    #[test]
    fn set_file_reads_files() {
        let mut m = Map::new();
        let mut read = |p: &str| Ok(format!("content of {p}"));
        parse_into_file("a=x.txt,b[0]=y", &mut m, &mut read).unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"a": "content of x.txt", "b": ["content of y"]})
        );
    }
}
