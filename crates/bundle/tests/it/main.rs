//! Bundle reading tests, one test binary with a module per area.

mod common;
mod reader;
mod shared_data;
