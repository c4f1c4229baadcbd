//! The benchmarks behind `fleet bench` (the CLI only parses flags and calls in here):
//! `apiserver` measures the embedded API server end to end over HTTPS; `scale` runs a real
//! manager process and N real agents with in-memory downstream clusters and prints the
//! `scale:` line the README quotes.

pub mod apiserver;
pub mod controller;
mod observer;
pub mod procfs;
pub mod scale;

/// Lifts the soft open-file limit to the hard limit: thousands of connections need it.
pub fn raise_fd_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::debug!(limit = n, "open-file limit"),
        Err(e) => eprintln!("warning: cannot raise the open-file limit: {e}"),
    }
}
