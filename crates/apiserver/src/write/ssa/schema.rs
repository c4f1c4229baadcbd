//! What server-side apply needs to know about a type: for each field its value type, whether it
//! is a declared field or a map entry, and for lists whether they are atomic, sets or
//! associative lists keyed by some fields. Built-in kinds take this from the strategic-merge
//! table of `fleet-patch` (generated from Kubernetes' OpenAPI), custom resources from the CRD's
//! structural schema (`x-kubernetes-list-type`, `-list-map-keys`, `-map-type`).

use fleet_patch::strategic::{self, Schema};

use crate::storage::crd::schema::Structural;
use crate::storage::registry::ResourceInfo;

/// How a list is merged and owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced and owned as a whole.
    Atomic,
    /// A set of scalars: items are owned one by one (`v:` elements).
    Set,
    /// An associative list keyed by these fields (`k:` elements).
    Map(Vec<String>),
}

#[derive(Clone, Copy, Debug)]
enum Node<'a> {
    /// No type information: maps are granular, lists atomic (the "deduced" type).
    Untyped,
    /// A built-in type of the strategic-merge table.
    Builtin(Schema),
    /// A node of a CRD's structural schema.
    Crd(&'a Structural),
}

/// The type at one position of an object.
#[derive(Clone, Debug)]
pub struct Ty<'a> {
    node: Node<'a>,
    /// List semantics, when the value here is a list.
    pub list: ListKind,
}

/// A child field's type and whether it is a declared field (as opposed to a map entry, which
/// is owned as a whole even when it holds an object).
pub struct Child<'a> {
    /// Type of the child value.
    pub ty: Ty<'a>,
    /// Declared struct field (`properties`) rather than an `additionalProperties` entry.
    pub declared: bool,
}

fn object_meta() -> Schema {
    strategic::schema_for("v1", "ConfigMap")
        .map(|s| s.field_info("metadata").schema)
        .unwrap_or_else(Schema::none)
}

fn crd_list(s: &Structural) -> ListKind {
    match s.list_type.as_deref() {
        Some("set") => ListKind::Set,
        Some("map") if !s.list_map_keys.is_empty() => ListKind::Map(s.list_map_keys.clone()),
        _ => ListKind::Atomic,
    }
}

impl<'a> Ty<'a> {
    /// The untyped (deduced) type.
    pub fn untyped() -> Ty<'a> {
        Ty {
            node: Node::Untyped,
            list: ListKind::Atomic,
        }
    }

    /// The root type of objects of a resource.
    pub fn root(info: &'a ResourceInfo) -> Ty<'a> {
        if let Some(s) = &info.schema {
            return Ty {
                node: Node::Crd(s),
                list: ListKind::Atomic,
            };
        }
        if info.builtin
            && let Some(s) = strategic::schema_for(&info.api_version(), &info.kind)
        {
            return Ty {
                node: Node::Builtin(s),
                list: ListKind::Atomic,
            };
        }
        Ty::untyped()
    }

    /// Whether a map here is owned as a whole (`x-kubernetes-map-type: atomic`).
    pub fn atomic_map(&self) -> bool {
        matches!(self.node, Node::Crd(s) if s.map_type.as_deref() == Some("atomic"))
    }

    /// The type of field `name` of an object here; `top` says this is the object's root, where
    /// `metadata` is always ObjectMeta.
    pub fn field(&self, name: &str, top: bool) -> Child<'a> {
        if top && name == "metadata" {
            return Child {
                ty: Ty {
                    node: Node::Builtin(object_meta()),
                    list: ListKind::Atomic,
                },
                declared: true,
            };
        }
        match self.node {
            Node::Untyped => Child {
                ty: Ty::untyped(),
                declared: true,
            },
            Node::Builtin(s) => {
                let f = s.field_info(name);
                let list = if f.merge && !f.merge_key.is_empty() {
                    let keys = if f.list_map_keys.is_empty() {
                        vec![f.merge_key.to_string()]
                    } else {
                        f.list_map_keys.iter().map(|k| k.to_string()).collect()
                    };
                    ListKind::Map(keys)
                } else if f.merge {
                    ListKind::Set
                } else {
                    ListKind::Atomic
                };
                let node = if f.schema.is_typed() {
                    Node::Builtin(f.schema)
                } else {
                    Node::Untyped
                };
                Child {
                    ty: Ty { node, list },
                    declared: true,
                }
            }
            Node::Crd(s) => {
                if let Some(p) = s.properties.get(name) {
                    Child {
                        ty: Ty {
                            node: Node::Crd(p),
                            list: crd_list(p),
                        },
                        declared: true,
                    }
                } else if let Some(a) = s.additional.as_deref() {
                    Child {
                        ty: Ty {
                            node: Node::Crd(a),
                            list: crd_list(a),
                        },
                        declared: false,
                    }
                } else {
                    Child {
                        ty: Ty::untyped(),
                        declared: true,
                    }
                }
            }
        }
    }

    /// The type of the items of a list here.
    pub fn item(&self) -> Ty<'a> {
        match self.node {
            // The table describes list fields by their element type already.
            Node::Builtin(s) => Ty {
                node: Node::Builtin(s),
                list: ListKind::Atomic,
            },
            Node::Crd(s) => match s.items.as_deref() {
                Some(i) => Ty {
                    node: Node::Crd(i),
                    list: crd_list(i),
                },
                None => Ty::untyped(),
            },
            Node::Untyped => Ty::untyped(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> ResourceInfo {
        crate::storage::builtin::builtin_resources()
            .into_iter()
            .find(|r| r.kind == "Deployment")
            .expect("deployments are built in")
    }

    #[test]
    fn builtin_lists_follow_the_patch_table() {
        let info = deployment();
        let root = Ty::root(&info);
        let pod = root
            .field("spec", true)
            .ty
            .field("template", false)
            .ty
            .field("spec", false)
            .ty;
        let containers = pod.field("containers", false).ty;
        assert_eq!(containers.list, ListKind::Map(vec!["name".into()]));
        let c = containers.item();
        assert_eq!(c.field("args", false).ty.list, ListKind::Atomic);
        assert_eq!(
            c.field("ports", false).ty.list,
            ListKind::Map(vec!["containerPort".into(), "protocol".into()])
        );
        let meta = root.field("metadata", true).ty;
        assert_eq!(meta.field("finalizers", false).ty.list, ListKind::Set);
    }
}
