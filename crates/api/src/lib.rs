//! `fleet.cattle.io/v1alpha1` types, fleet.yaml model, label/annotation keys and naming functions.
//! Pure data and pure functions: this crate does no I/O.
