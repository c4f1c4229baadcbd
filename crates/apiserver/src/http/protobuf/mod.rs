//! Kubernetes protobuf request bodies → JSON.
//!
//! kubectl's typed clients (`kubectl create configmap|secret|namespace|deployment|token`,
//! `kubectl auth can-i`, ...) send `application/vnd.kubernetes.protobuf` bodies, which
//! kube-apiserver accepts. The server stores JSON, so a protobuf body is transcoded once on the way
//! in, driven by a schema generated from Kubernetes' own `.proto` and Go type definitions
//! (`generated.rs`, made by `scripts/gen-proto-table`). Responses stay JSON: clients decode by the
//! response's content type.

mod generated;
mod schema;

use base64::Engine as _;
use serde_json::{Map, Value};

use schema::{Field, Message, Ty};

/// The media type kubectl's typed clients send.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Every Kubernetes protobuf body starts with these four bytes.
const MAGIC: &[u8; 4] = b"k8s\0";
/// Deeper nesting than any Kubernetes type has: stops hostile bodies from exhausting the stack.
const MAX_DEPTH: usize = 64;
const META_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// Why a protobuf body could not be read; the REST layer answers 400 BadRequest with this text.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("protobuf body does not start with the Kubernetes \"k8s\\0\" prefix")]
    Magic,
    #[error("malformed protobuf at byte {0}: {1}")]
    Malformed(usize, &'static str),
    #[error("no protobuf schema for apiVersion {api_version:?}, kind {kind:?}")]
    UnknownKind { api_version: String, kind: String },
    #[error("protobuf content encoding {0:?} is not supported")]
    Encoding(String),
    #[error("field {0}: {1}")]
    Field(&'static str, String),
    #[error("protobuf message nesting exceeds {MAX_DEPTH} levels")]
    TooDeep,
}

/// Decodes a `application/vnd.kubernetes.protobuf` body (magic + `runtime.Unknown` envelope) into
/// the JSON object kube-apiserver would have received as JSON, `apiVersion` and `kind` included.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let rest = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtoError::Magic)?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut encoding = String::new();
    let mut r = Reader::new(rest, MAGIC.len());
    while !r.done() {
        let (num, wt) = r.key()?;
        match (num, wt) {
            (1, 2) => {
                let base = r.offset();
                let mut tm = Reader::new(r.bytes()?, base);
                while !tm.done() {
                    match tm.key()? {
                        (1, 2) => api_version = tm.string("apiVersion")?,
                        (2, 2) => kind = tm.string("kind")?,
                        (_, wt) => tm.skip(wt)?,
                    }
                }
            }
            (2, 2) => raw = r.bytes()?,
            (3, 2) => encoding = r.string("contentEncoding")?,
            (_, wt) => r.skip(wt)?,
        }
    }
    if !encoding.is_empty() {
        return Err(ProtoError::Encoding(encoding));
    }
    let msg = resolve(&api_version, &kind).ok_or_else(|| ProtoError::UnknownKind {
        api_version: api_version.clone(),
        kind: kind.clone(),
    })?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version));
    out.insert("kind".into(), Value::String(kind));
    let body = message(msg, raw, MAGIC.len(), 0)?;
    if let Value::Object(fields) = body {
        for (k, v) in fields {
            // The object's own TypeMeta is never on the wire; the envelope's wins.
            if k != "apiVersion" && k != "kind" {
                out.insert(k, v);
            }
        }
    }
    Ok(Value::Object(out))
}

/// The message for a kind in a group version, falling back to `meta/v1` (DeleteOptions, Status...).
fn resolve(api_version: &str, kind: &str) -> Option<&'static Message> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    generated::PACKAGES
        .iter()
        .filter(|(g, v, _)| *g == group && *v == version)
        .find_map(|(_, _, pkg)| find(&format!("{pkg}.{kind}")))
        .or_else(|| find(&format!("{META_V1}.{kind}")))
}

fn find(name: &str) -> Option<&'static Message> {
    generated::MESSAGES
        .binary_search_by(|m| m.name.cmp(name))
        .ok()
        .and_then(|i| generated::MESSAGES.get(i))
}

fn message_named(name: &'static str) -> Result<&'static Message, ProtoError> {
    find(name).ok_or(ProtoError::Field(
        name,
        "message missing from the schema".into(),
    ))
}

/// Transcodes one message. Special apimachinery types get their JSON form (Time → RFC 3339,
/// IntOrString → number or string, Quantity → string, RawExtension → embedded JSON, ...).
fn message(
    msg: &'static Message,
    data: &[u8],
    base: usize,
    depth: usize,
) -> Result<Value, ProtoError> {
    if depth > MAX_DEPTH {
        return Err(ProtoError::TooDeep);
    }
    if let Some(v) = special(msg.name, data, base)? {
        return Ok(v);
    }
    let mut out = Map::new();
    let mut inlined: Vec<Map<String, Value>> = Vec::new();
    let mut r = Reader::new(data, base);
    while !r.done() {
        let (num, wt) = r.key()?;
        let Some(field) = msg
            .fields
            .binary_search_by(|f| f.number.cmp(&num))
            .ok()
            .and_then(|i| msg.fields.get(i))
        else {
            r.skip(wt)?;
            continue;
        };
        if field.repeated {
            let items = out
                .entry(field.json)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = items {
                repeated(field, wt, &mut r, depth, items)?;
            }
            continue;
        }
        if let Ty::Map(kt, vt) = field.ty {
            let base = r.offset();
            let entry = r.bytes()?;
            let (k, v) = map_entry(field, kt, vt, entry, base, depth)?;
            if let Value::Object(m) = out
                .entry(field.json)
                .or_insert_with(|| Value::Object(Map::new()))
            {
                m.insert(k, v);
            }
            continue;
        }
        let Some(v) = single(field, field.ty, wt, &mut r, depth)? else {
            continue;
        };
        if field.inline {
            if let Value::Object(m) = v {
                inlined.push(m);
            }
            continue;
        }
        if field.omit_zero && is_zero(&v) {
            out.remove(field.json);
            continue;
        }
        out.insert(field.json.to_string(), v);
    }
    if msg.items_wrapper {
        return Ok(out.remove("items").unwrap_or(Value::Array(Vec::new())));
    }
    for m in inlined {
        for (k, v) in m {
            out.entry(k).or_insert(v);
        }
    }
    Ok(Value::Object(out))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn repeated(
    field: &'static Field,
    wt: u8,
    r: &mut Reader<'_>,
    depth: usize,
    items: &mut Vec<Value>,
) -> Result<(), ProtoError> {
    let packable = matches!(field.ty, Ty::Bool | Ty::Int32 | Ty::Int64);
    if packable && wt == 2 {
        let base = r.offset();
        let mut packed = Reader::new(r.bytes()?, base);
        while !packed.done() {
            if let Some(v) = single(field, field.ty, 0, &mut packed, depth)? {
                items.push(v);
            }
        }
        return Ok(());
    }
    if let Some(v) = single(field, field.ty, wt, r, depth)? {
        items.push(v);
    }
    Ok(())
}

fn map_entry(
    field: &'static Field,
    kt: &'static Ty,
    vt: &'static Ty,
    entry: &[u8],
    base: usize,
    depth: usize,
) -> Result<(String, Value), ProtoError> {
    let mut key = String::new();
    let mut value: Option<Value> = None;
    let mut r = Reader::new(entry, base);
    while !r.done() {
        let (num, wt) = r.key()?;
        match num {
            1 => match single(field, *kt, wt, &mut r, depth)? {
                Some(Value::String(s)) => key = s,
                Some(other) => key = other.to_string(),
                None => {}
            },
            2 => value = single(field, *vt, wt, &mut r, depth)?,
            _ => r.skip(wt)?,
        }
    }
    let value = value.unwrap_or_else(|| zero_of(vt));
    Ok((key, value))
}

/// The JSON zero value of a type (a map entry whose value is the default is sent without it).
fn zero_of(ty: &Ty) -> Value {
    match ty {
        Ty::String => Value::String(String::new()),
        Ty::Bytes => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::Int32 | Ty::Int64 => Value::Number(0.into()),
        Ty::Message(_) | Ty::Map(..) => Value::Object(Map::new()),
    }
}

/// Reads one value of `ty`. `None` means "leave the field out" (a zero Time, as Go's JSON does).
fn single(
    field: &'static Field,
    ty: Ty,
    wt: u8,
    r: &mut Reader<'_>,
    depth: usize,
) -> Result<Option<Value>, ProtoError> {
    let want = match ty {
        Ty::Bool | Ty::Int32 | Ty::Int64 => 0,
        Ty::String | Ty::Bytes | Ty::Message(_) | Ty::Map(..) => 2,
    };
    if wt != want {
        return Err(ProtoError::Field(
            field.json,
            format!("wire type {wt} does not match the schema"),
        ));
    }
    Ok(match ty {
        Ty::Bool => Some(Value::Bool(r.varint()? != 0)),
        // int32 values are sign-extended to 64 bits on the wire.
        Ty::Int32 => Some(Value::Number((r.varint()? as i64 as i32).into())),
        Ty::Int64 => Some(Value::Number((r.varint()? as i64).into())),
        Ty::String => Some(Value::String(r.string(field.json)?)),
        Ty::Bytes => Some(Value::String(
            base64::engine::general_purpose::STANDARD.encode(r.bytes()?),
        )),
        Ty::Message(name) => {
            let base = r.offset();
            let data = r.bytes()?;
            let msg = message_named(name)?;
            let v = message(msg, data, base, depth + 1)?;
            if v.is_null() { None } else { Some(v) }
        }
        Ty::Map(..) => {
            return Err(ProtoError::Field(field.json, "nested map".into()));
        }
    })
}

/// apimachinery types whose JSON form is not an object of their fields.
fn special(name: &str, data: &[u8], base: usize) -> Result<Option<Value>, ProtoError> {
    let Some(short) = name
        .strip_prefix("k8s.io.apimachinery.pkg.")
        .or_else(|| name.strip_prefix("k8s.io.apiextensions-apiserver.pkg."))
    else {
        return Ok(None);
    };
    let fields = || -> Result<Vec<(u32, u8, Scalar<'_>)>, ProtoError> {
        let mut out = Vec::new();
        let mut r = Reader::new(data, base);
        while !r.done() {
            let (num, wt) = r.key()?;
            let v = match wt {
                0 => Scalar::Varint(r.varint()?),
                2 => Scalar::Bytes(r.bytes()?),
                _ => {
                    r.skip(wt)?;
                    continue;
                }
            };
            out.push((num, wt, v));
        }
        Ok(out)
    };
    let varint = |f: &[(u32, u8, Scalar<'_>)], n: u32| {
        f.iter()
            .rev()
            .find_map(|(num, _, v)| match v {
                Scalar::Varint(x) if *num == n => Some(*x),
                _ => None,
            })
            .unwrap_or(0)
    };
    let bytes = |f: &[(u32, u8, Scalar<'_>)], n: u32| -> Vec<u8> {
        f.iter()
            .rev()
            .find_map(|(num, _, v)| match v {
                Scalar::Bytes(b) if *num == n => Some(b.to_vec()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let text = |b: Vec<u8>, what: &'static str| {
        String::from_utf8(b).map_err(|_| ProtoError::Field(what, "invalid UTF-8".into()))
    };
    Ok(Some(match short {
        "apis.meta.v1.Time" | "apis.meta.v1.MicroTime" => {
            let f = fields()?;
            let (secs, nanos) = (varint(&f, 1) as i64, varint(&f, 2) as i64 as i32);
            if secs == 0 && nanos == 0 {
                return Ok(Some(Value::Null));
            }
            let micro = short.ends_with("MicroTime");
            Value::String(timestamp(secs, nanos, micro)?)
        }
        "apis.meta.v1.Duration" => {
            let f = fields()?;
            Value::String(go_duration(varint(&f, 1) as i64))
        }
        "util.intstr.IntOrString" => {
            let f = fields()?;
            if varint(&f, 1) == 1 {
                Value::String(text(bytes(&f, 3), "strVal")?)
            } else {
                Value::Number((varint(&f, 2) as i64 as i32).into())
            }
        }
        "api.resource.Quantity" => {
            let f = fields()?;
            Value::String(text(bytes(&f, 1), "quantity")?)
        }
        "runtime.RawExtension" | "apis.meta.v1.FieldsV1" | "apis.apiextensions.v1.JSON" => {
            let f = fields()?;
            let raw = bytes(&f, 1);
            if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&raw)
                    .map_err(|e| ProtoError::Field("raw", format!("embedded JSON: {e}")))?
            }
        }
        _ => return Ok(None),
    }))
}

enum Scalar<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// RFC 3339 in UTC as Go's `metav1.Time` (seconds) or `metav1.MicroTime` (microseconds) prints it.
fn timestamp(secs: i64, nanos: i32, micro: bool) -> Result<String, ProtoError> {
    let ts = jiff::Timestamp::new(secs, if micro { nanos } else { 0 })
        .map_err(|e| ProtoError::Field("time", e.to_string()))?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(if micro {
        format!("{base}.{:06}Z", nanos.max(0) / 1000)
    } else {
        format!("{base}Z")
    })
}

/// Go's `time.Duration.String()`: "1h0m0s", "1m30s", "1.5s", "500ms", "0s".
fn go_duration(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    if u == 0 {
        return "0s".into();
    }
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", fraction(u, div));
    }
    let secs = u / 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let rem = u % 1_000_000_000;
    let secs_part = fraction(s * 1_000_000_000 + rem, 1_000_000_000);
    if h > 0 {
        format!("{sign}{h}h{m}m{secs_part}s")
    } else if m > 0 {
        format!("{sign}{m}m{secs_part}s")
    } else {
        format!("{sign}{secs_part}s")
    }
}

/// `v / div` with the remainder as decimals, trailing zeros dropped ("1.5", "2").
fn fraction(v: u64, div: u64) -> String {
    let (int, rem) = (v / div, v % div);
    if rem == 0 {
        return int.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{rem:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// A bounds-checked protobuf wire reader; `base` makes error offsets absolute.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }
    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }
    fn offset(&self) -> usize {
        self.base + self.pos
    }
    fn err(&self, what: &'static str) -> ProtoError {
        ProtoError::Malformed(self.offset(), what)
    }
    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| self.err("truncated varint"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }
    fn key(&mut self) -> Result<(u32, u8), ProtoError> {
        let k = self.varint()?;
        let num = u32::try_from(k >> 3).map_err(|_| self.err("field number out of range"))?;
        if num == 0 {
            return Err(self.err("field number 0"));
        }
        Ok((num, (k & 7) as u8))
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| self.err("length past the end of the body"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| self.err("length out of range"))?;
        self.take(n)
    }
    fn string(&mut self, field: &'static str) -> Result<String, ProtoError> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| ProtoError::Field(field, "invalid UTF-8".into()))
    }
    fn skip(&mut self, wt: u8) -> Result<(), ProtoError> {
        match wt {
            0 => self.varint().map(drop),
            1 => self.take(8).map(drop),
            2 => self.bytes().map(drop),
            5 => self.take(4).map(drop),
            _ => Err(self.err("unsupported wire type")),
        }
    }
}

#[cfg(test)]
mod tests;
