//! Capped exponential backoff with jitter, and a log that speaks at a capped rate: how the agent
//! waits for the manager when it cannot reach it.

use std::time::{Duration, Instant};

/// Capped exponential backoff with ±25% jitter.
pub struct Backoff {
    initial: Duration,
    max: Duration,
    current: Duration,
}

impl Backoff {
    /// Starts at `initial`, doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            current: initial,
        }
    }

    /// The next delay (jittered), then doubles the base.
    pub fn next_delay(&mut self) -> Duration {
        let base = self.current;
        self.current = (self.current * 2).min(self.max);
        jitter(base)
    }

    /// Back to the initial delay after a success.
    pub fn reset(&mut self) {
        self.current = self.initial;
    }
}

/// `d` scaled by a pseudo-random factor in [0.75, 1.25).
pub fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos())
        .unwrap_or(0);
    // xorshift of the clock's nanoseconds: enough spread to keep agents from retrying in step.
    let mut x = u64::from(nanos) | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let f = 0.75 + (x % 1000) as f64 / 2000.0;
    d.mul_f64(f)
}

/// Logs a warning at most once per interval, counting what it suppressed.
pub struct RateLimitedLog {
    every: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    /// A log that speaks at most once per `every`.
    pub fn new(every: Duration) -> RateLimitedLog {
        RateLimitedLog {
            every,
            last: None,
            suppressed: 0,
        }
    }

    /// Logs `msg` unless the last log was less than the interval ago.
    pub fn warn(&mut self, msg: &str) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < self.every)
        {
            self.suppressed += 1;
            return;
        }
        if self.suppressed > 0 {
            tracing::warn!(
                suppressed = self.suppressed,
                "{msg} (and {} similar since the last message)",
                self.suppressed
            );
        } else {
            tracing::warn!("{msg}");
        }
        self.last = Some(now);
        self.suppressed = 0;
    }

    /// Forgets the rate state after a success, so the next failure is logged at once.
    pub fn reset(&mut self) {
        self.last = None;
        self.suppressed = 0;
    }
}

/// `e` with the causes its message leaves out: a transport error says "client error
/// (SendRequest)" while its cause ("connection closed before message completed", "keep-alive
/// timed out") is what tells a dropped connection from a refused one.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        cause = c.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn chain_adds_the_causes_a_message_leaves_out() {
        let e = E(
            "ServiceError: client error (SendRequest)",
            Some(Box::new(E(
                "client error (SendRequest)",
                Some(Box::new(E(
                    "connection closed before message completed",
                    None,
                ))),
            ))),
        );
        assert_eq!(
            chain(&e),
            "ServiceError: client error (SendRequest): connection closed before message completed"
        );
        assert_eq!(chain(&E("alone", None)), "alone");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(8));
        let ds: Vec<Duration> = (0..6).map(|_| b.next_delay()).collect();
        for (d, base) in ds.iter().zip([1u64, 2, 4, 8, 8, 8]) {
            let base = Duration::from_secs(base);
            assert!(
                *d >= base.mul_f64(0.75) && *d < base.mul_f64(1.25),
                "{d:?} vs {base:?}"
            );
        }
        b.reset();
        assert!(b.next_delay() < Duration::from_millis(1250));
    }
}
