//! Link options of the `fleet` binary.
//!
//! Position-dependent: as Go links upstream Fleet's binaries by default. A PIE of this size
//! carries 85,000 relative relocations that the loader applies to 1.4 MB of data at every start;
//! without them `fleet template` of a small chart starts with 37% fewer page faults and about
//! 4.5 MiB less RSS (`perf stat -r 30 fleet template CHART`). Shared libraries are still placed
//! at random.
//!
//! Function order: the functions an agent and `fleet template` execute are placed first in
//! `.text` (`link-order.txt.gz`, made by `scripts/gen-link-order`), so an agent maps about 5 MiB
//! of dense code instead of 64 KiB fault-around windows spread over 45 MB. Only
//! where rust-lld is the default linker (x86_64 Linux with glibc, Rust 1.90 and later) and no
//! RUSTFLAGS choose another; a name the linker does not find is skipped, so a stale list costs
//! memory, never correctness.
use std::io::Read;

/// Whether rustc links this target with its bundled rust-lld (the default since Rust 1.90 on
/// x86_64-unknown-linux-gnu), which understands `--symbol-ordering-file`.
fn links_with_rust_lld() -> bool {
    if std::env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("link") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let minor = text
        .lines()
        .find_map(|l| l.strip_prefix("release: 1."))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}

fn main() {
    println!("cargo:rustc-link-arg-bin=fleet=-no-pie");
    println!("cargo:rerun-if-changed=link-order.txt.gz");
    // `FLEET_LINK_ORDER=off` links in the compiler's order (a baseline for the agent bench).
    println!("cargo:rerun-if-env-changed=FLEET_LINK_ORDER");
    if std::env::var("FLEET_LINK_ORDER").as_deref() == Ok("off") || !links_with_rust_lld() {
        return;
    }
    let (Ok(dir), Ok(out)) = (
        std::env::var("CARGO_MANIFEST_DIR"),
        std::env::var("OUT_DIR"),
    ) else {
        return;
    };
    let mut list = String::new();
    let read = std::fs::File::open(format!("{dir}/link-order.txt.gz"))
        .and_then(|f| flate2::read::GzDecoder::new(f).read_to_string(&mut list));
    if let Err(e) = read {
        println!("cargo:warning=link-order.txt.gz not used: {e}");
        return;
    }
    let path = format!("{out}/link-order.txt");
    if let Err(e) = std::fs::write(&path, list) {
        println!("cargo:warning=link-order.txt not written: {e}");
        return;
    }
    println!("cargo:rustc-link-arg-bin=fleet=-Wl,--symbol-ordering-file={path}");
    println!("cargo:rustc-link-arg-bin=fleet=-Wl,--no-warn-symbol-ordering");
}
