//! What the benchmarks read about processes from `/proc`: resident memory and CPU time, of this
//! process or of a child (the manager in `bench scale`).

/// A `Vm*:` field of `/proc/<pid>/status` in KiB.
fn status_kib(pid: &str, field: &str) -> Option<u64> {
    field_kib(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        field,
    )
}

/// A `Vm*:` or `Rss*:` field of a `/proc/<pid>/status` text, in KiB.
fn field_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok()
}

/// The fields of `/proc/<pid>/stat` after the parenthesised command name (the state is the
/// first); empty where unavailable.
fn stat_fields(pid: &str) -> Vec<u64> {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Vec::new();
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Vec::new();
    };
    // The state letter is not a number: kept as 0 so that indices match proc(5)'s, less 3.
    rest.split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect()
}

/// User plus system CPU time of process `pid` so far, in seconds (`/proc/<pid>/stat`, in the
/// kernel's fixed 100 Hz user-visible ticks); 0 where unavailable.
fn cpu_seconds_of(pid: &str) -> f64 {
    let f = stat_fields(pid);
    // utime and stime are proc(5)'s 14th and 15th fields.
    let ticks = |i: usize| f.get(i).copied().unwrap_or(0) as f64;
    (ticks(11) + ticks(12)) / 100.0
}

/// Minor page faults of process `pid` so far (proc(5)'s 10th field, `minflt`); 0 where
/// unavailable. Why: each is the first touch of a page the process maps, a cost that grows with
/// the memory the fleet takes rather than with its work, and a count checks what clock-sampled
/// profiles attribute to fault handling (on the project's VM they showed 17% where a count and
/// the process's system time gave 2-3%: docs/scale-journal.md, 2026-12-07, night).
fn minor_faults_of(pid: &str) -> u64 {
    stat_fields(pid).get(7).copied().unwrap_or(0)
}

/// CPU seconds (user + system) of this process so far.
pub fn cpu_seconds() -> f64 {
    cpu_seconds_of("self")
}

/// CPU seconds (user + system) of process `pid` so far.
pub fn cpu_seconds_pid(pid: u32) -> f64 {
    cpu_seconds_of(&pid.to_string())
}

/// Minor page faults of this process so far.
pub fn minor_faults() -> u64 {
    minor_faults_of("self")
}

/// Minor page faults of process `pid` so far.
pub fn minor_faults_pid(pid: u32) -> u64 {
    minor_faults_of(&pid.to_string())
}

/// Resident set size of this process.
pub fn rss_bytes() -> Option<u64> {
    status_kib("self", "VmRSS:").map(|k| k * 1024)
}

/// Peak resident set size of this process.
pub fn hwm_bytes() -> Option<u64> {
    status_kib("self", "VmHWM:").map(|k| k * 1024)
}

/// Resident set size of process `pid`.
pub fn rss_bytes_pid(pid: u32) -> Option<u64> {
    status_kib(&pid.to_string(), "VmRSS:").map(|k| k * 1024)
}

/// The value of environment variable `name` that process `pid` started with (None: unset or
/// unreadable).
pub fn env_var_pid(pid: u32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0).find_map(|kv| {
        let v = kv.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(String::from_utf8_lossy(v).into_owned())
    })
}

/// Peak resident set size of process `pid`.
pub fn hwm_bytes_pid(pid: u32) -> Option<u64> {
    status_kib(&pid.to_string(), "VmHWM:").map(|k| k * 1024)
}

/// The largest anonymous and file-backed resident memory (`RssAnon`, `RssFile`) of a process,
/// sampled five times a second on a thread of its own until the process is gone. Why: the
/// kernel's peak (`VmHWM`) says how high the total went, not in what; a peak that comes and
/// goes within a phase (one run of two at 10,000 × 10 peaked 280 MiB above the other) is
/// told apart as heap or mapped files only by sampling both while it happens.
pub struct PeakSampler {
    anon: std::sync::atomic::AtomicU64,
    file: std::sync::atomic::AtomicU64,
}

impl PeakSampler {
    /// Starts sampling `pid` (nothing is sampled where `/proc` has no such fields). Sampling
    /// stops when the returned sampler is dropped, so a later process given the same pid after
    /// this one was reaped is never sampled in its name.
    pub fn start(pid: u32) -> std::sync::Arc<PeakSampler> {
        let sampler = std::sync::Arc::new(PeakSampler {
            anon: 0.into(),
            file: 0.into(),
        });
        let weak = std::sync::Arc::downgrade(&sampler);
        let spawned = std::thread::Builder::new()
            .name("bench-rss-sampler".into())
            .spawn(move || {
                let path = format!("/proc/{pid}/status");
                while let Some(s) = weak.upgrade()
                    && let Ok(status) = std::fs::read_to_string(&path)
                    && let (Some(anon), Some(file)) = (
                        field_kib(&status, "RssAnon:"),
                        field_kib(&status, "RssFile:"),
                    )
                {
                    s.anon
                        .fetch_max(anon * 1024, std::sync::atomic::Ordering::Relaxed);
                    s.file
                        .fetch_max(file * 1024, std::sync::atomic::Ordering::Relaxed);
                    drop(s);
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no memory sampling of process {pid}: {e}");
        }
        sampler
    }

    /// The largest (anonymous, file-backed) resident bytes sampled so far.
    pub fn peaks(&self) -> (u64, u64) {
        (
            self.anon.load(std::sync::atomic::Ordering::Relaxed),
            self.file.load(std::sync::atomic::Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_sees_this_process_memory() {
        let sampler = PeakSampler::start(std::process::id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sampler.peaks().0 == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let (anon, file) = sampler.peaks();
        assert!(anon > 0, "no anonymous memory sampled");
        assert!(
            file > 0,
            "no file-backed memory sampled (the binary itself is mapped)"
        );
    }

    #[test]
    fn this_process_has_memory_and_cpu() {
        // RSS first: the peak read after it covers it, while other test threads allocate
        // (read the other way round, RSS could grow past the peak read before it).
        let rss = rss_bytes().unwrap_or(0);
        let hwm = hwm_bytes().unwrap_or(0);
        assert!(rss > 0);
        assert!(hwm >= rss, "peak {hwm} below an earlier RSS {rss}");
        assert_eq!(
            rss_bytes_pid(std::process::id()).is_some(),
            rss_bytes().is_some()
        );
        assert!(cpu_seconds() >= 0.0);
    }

    #[test]
    fn touching_fresh_memory_counts_minor_faults() {
        let before = minor_faults();
        // 64 MiB, written page by page: fresh pages, each faulted in on its first write.
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let after = minor_faults();
        // One fault per 4 KiB page; where the kernel gives every mapping transparent huge pages
        // (`enabled` set to `always`), one per 2 MiB, 32 for the whole.
        let huge = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| s.contains("[always]"));
        let want = if huge { 16 } else { 1000 };
        assert!(
            after >= before + want,
            "{before} minor faults before and {after} after touching 16,384 fresh pages \
             (transparent huge pages always: {huge})"
        );
        assert!(minor_faults_pid(std::process::id()) >= after);
    }
}
