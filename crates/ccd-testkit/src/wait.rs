//! Waiting in tests: polling a condition until it holds, with a deadline
//! (shared by ccd's and ccd-web's test harnesses and the browser driver).

use std::time::{Duration, Instant};

/// Polls `f` every 50 ms until it gives `Some`, or panics after `timeout`
/// naming `what`.
pub fn wait_for<X>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<X>) -> X {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(x) = f() {
            return x;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_returns_the_first_some_and_panics_past_the_deadline() {
        let mut n = 0;
        let got = wait_for(Duration::from_secs(5), "the third call", || {
            n += 1;
            (n == 3).then_some(n)
        });
        assert_eq!(got, 3);
        let timed_out = std::panic::catch_unwind(|| {
            wait_for(Duration::from_millis(120), "never", || None::<()>)
        });
        let msg = timed_out.expect_err("a panic");
        let msg = msg
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        assert_eq!(msg, "timed out waiting for never");
    }
}
