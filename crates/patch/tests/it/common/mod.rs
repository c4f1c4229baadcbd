//! Shared test fixtures.
#![allow(dead_code)]

pub mod cases;
pub mod objects;
