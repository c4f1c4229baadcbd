//! Shapes of the generated protobuf schema table (see `scripts/gen-proto-table`).

/// A field's protobuf type, with message types named by their full protobuf name.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ty {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Message(&'static str),
    /// `map<K, V>`: on the wire a repeated entry message with key = 1, value = 2.
    Map(&'static Ty, &'static Ty),
}

/// One field of a message, with the JSON facts only the Go struct knows.
#[derive(Debug)]
pub(super) struct Field {
    pub number: u32,
    /// The JSON name (Kubernetes' protobuf field names are the JSON names).
    pub json: &'static str,
    pub ty: Ty,
    pub repeated: bool,
    /// Go `omitempty` on a non-pointer scalar: a zero value is left out of the JSON.
    pub omit_zero: bool,
    /// Go `json:",inline"`: the sub-object's fields are merged into the parent.
    pub inline: bool,
}

/// One message, fields sorted by number.
#[derive(Debug)]
pub(super) struct Message {
    pub name: &'static str,
    /// A Go named slice (e.g. `ExtraValue []string`) wrapped as `{items: [...]}` on the wire; in
    /// JSON it is the bare array.
    pub items_wrapper: bool,
    pub fields: &'static [Field],
}
