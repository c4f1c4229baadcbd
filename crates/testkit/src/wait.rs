//! Waiting on a condition with a deadline: tests never sleep a fixed time in place of a condition.

use std::time::{Duration, Instant};

/// Polls `f` every 20–200 ms until it returns `Some`, or panics after `timeout` naming `what` and
/// the last state `f` reported through `last`.
pub fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(20);
    loop {
        match f() {
            Ok(v) => return v,
            Err(last) => {
                if Instant::now() > deadline {
                    panic!("timed out after {timeout:?} waiting for {what}; last: {last}");
                }
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// [`eventually`] for async conditions (does not block the runtime while waiting).
pub async fn eventually_async<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(20);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(last) => {
                if Instant::now() > deadline {
                    panic!("timed out after {timeout:?} waiting for {what}; last: {last}");
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_once_the_condition_holds() {
        let mut n = 0;
        let v = eventually("n reaches 3", Duration::from_secs(5), || {
            n += 1;
            if n >= 3 { Ok(n) } else { Err(format!("n={n}")) }
        });
        assert_eq!(v, 3);
    }

    #[test]
    #[should_panic(expected = "timed out")]
    fn panics_with_the_last_state_after_the_deadline() {
        eventually::<()>(
            "never",
            Duration::from_millis(50),
            || Err("still no".into()),
        );
    }
}
