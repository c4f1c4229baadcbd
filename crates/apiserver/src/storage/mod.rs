//! Storage and the resource table: what the API holds and how it is keyed. Imports nothing from
//! the layers above.

pub mod builtin;
pub(crate) mod crd;
pub(crate) mod errors;
pub(crate) mod objects;
pub mod registry;
pub(crate) mod review_kinds;
pub(crate) mod schema;
pub(crate) mod selectors;
pub mod store;
pub(crate) mod validation;
