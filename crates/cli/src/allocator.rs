//! jemalloc settings per kind of process, set at its start through mallctl (one binary runs
//! every command, so a compile-time configuration would apply to all of them).
//!
//! The agent (`fleet agent`): an agent allocates in short bursts
//! (a deploy, a relist) and then sits idle for minutes, and jemalloc's defaults are made for the
//! opposite: pages freed by a burst are kept dirty for reuse and returned only by later
//! allocation activity that an idle process never has, every thread gets an arena of its own,
//! and each thread's cache keeps freed objects. Idle with 50 BundleDeployments (`cargo bench -p
//! fleet-cli --bench agent`): 5.1 MiB of anonymous memory with the defaults, 3.0 MiB with
//! freed pages returned at once, one arena and no thread caches (the first alone 4.1, the
//! second alone 4.4, both 3.5). A background purging thread instead: 4.7.
//!
//! The server (`fleet server`): its write path allocates per request, so it keeps jemalloc's
//! arenas and thread caches; but the defaults keep pages freed by a rollout's bursts dirty for
//! ten seconds, returned only when later allocation in the same arena gets round to it, and the
//! manager's resident memory ran well above what it held. A background thread returns them on
//! time, after a second.

use std::ffi::{CStr, c_void};

/// Sets one mallctl value; a name this jemalloc does not know is ignored (the settings
/// save memory, nothing depends on them).
fn set<T: Copy>(name: &CStr, value: T) {
    let mut value = value;
    // SAFETY: `name` is NUL-terminated, `value` is a live `T` of the size passed, and each
    // name below takes a value of exactly that type (ssize_t, unsigned, bool).
    let _ = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&raw mut value).cast::<c_void>(),
            size_of::<T>(),
        )
    };
}

/// The agent's settings: freed pages go back to the system at once (dirty and muzzy decay 0) in arena 0, which
/// every thread of the agent uses, and in any arena made later; the calling (main) thread
/// gets the per-thread settings too.
pub fn agent_process() {
    for name in [
        c"arenas.dirty_decay_ms",
        c"arenas.muzzy_decay_ms",
        c"arena.0.dirty_decay_ms",
        c"arena.0.muzzy_decay_ms",
    ] {
        set::<isize>(name, 0);
    }
    agent_thread();
}

/// Per thread (the runtime's `on_thread_start`): arena 0 and no thread cache.
pub fn agent_thread() {
    set::<u32>(c"thread.arena", 0);
    set::<bool>(c"thread.tcache.enabled", false);
}

/// The manager's settings: freed pages returned by jemalloc's background thread after a second
/// (instead of ten, and only when allocation activity in that arena gets to it), in every arena.
pub fn server_process() {
    for name in [c"arenas.dirty_decay_ms", c"arena.0.dirty_decay_ms"] {
        set::<isize>(name, SERVER_DIRTY_DECAY_MS);
    }
    set::<bool>(c"background_thread", true);
}

/// How long the server keeps freed pages for reuse before returning them.
const SERVER_DIRTY_DECAY_MS: isize = 1000;
