//! A permission prompt answered while someone else types into the session
//! (issue 50, finding 4): a second client pressing arrows every 1–4 ms
//! during `session.respond` cannot move the pointer between the walk's look
//! and its Enter — the holder holds other input while a walk types — so
//! the answer given is the one reported, and no spurious "prompt not
//! shown" comes back. Before the holder held input, `respond no` replied
//! `option: "No"` while the tool ran (1 run in 25) and 19 of 25 runs ended
//! in `-32013`.

mod common;

use ccd_protocol::methods::session::{RespondChoice, RespondParams, SessionRespond};
use common::{next_event, wait_for, Sandbox};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// Down and Up arrows (normal cursor mode), base64.
const ARROWS: [&str; 2] = ["G1tC", "G1tB"];

fn screen(sb: &Sandbox, sid: &str) -> String {
    sb.ok(&["screen", sid])
}

/// Presses arrows into `sid` from its own connection every 1–4 ms until
/// `stop`; how many it pressed.
fn hammer(sb: &Sandbox, sid: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u32> {
    let mut c = sb.client();
    std::thread::spawn(move || {
        let mut n = 0u32;
        while !stop.load(Ordering::Acquire) {
            let data = ARROWS[(n % 2) as usize];
            let _ = c.call_value("session.input", json!({"session": sid, "data": data}));
            n += 1;
            std::thread::sleep(Duration::from_millis(1 + u64::from(n % 4)));
        }
        n
    })
}

#[test]
fn an_answer_walked_while_arrows_arrive_is_the_one_taken_and_reported() {
    // A CLI that takes each chunk of keys 15 ms after it arrives, as the
    // real one lags behind a fast typist: arrows are always in flight.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_KEY_LAG_MS", "15")]);
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({})).unwrap();
    for round in 0..6 {
        // A session per round: each outcome's words are on its screen once.
        let sid = sb.new_session(&format!("raced{round}"));
        let choice = if round % 2 == 0 {
            RespondChoice::No
        } else {
            RespondChoice::Yes
        };
        let text = format!("perm touch round{round}.txt");
        sb.ok(&["send", &sid, &text]);
        let deadline = Instant::now() + T;
        let prompt = loop {
            assert!(Instant::now() < deadline, "no permission attention");
            let Some(e) = next_event(&mut c, Duration::from_millis(200)) else {
                continue;
            };
            if e["type"] == "session.attention" && e["session"] == sid.as_str() {
                if let Some(p) = e["prompt"].as_str() {
                    break p.to_string();
                }
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let presser = hammer(&sb, sid.clone(), stop.clone());
        // Let the arrows start before the walk does.
        std::thread::sleep(Duration::from_millis(50));
        let r = c.call::<SessionRespond>(&RespondParams {
            session: sid.clone(),
            choice,
            message: None,
            prompt: Some(prompt.clone()),
        });
        stop.store(true, Ordering::Release);
        let pressed = presser.join().expect("the presser");
        assert!(pressed > 5, "round {round}: only {pressed} arrows pressed");
        let r = r.unwrap_or_else(|e| {
            panic!(
                "round {round}: {choice:?} failed while arrows arrived: {e}\n{}",
                screen(&sb, &sid)
            )
        });
        let (want, outcome, not) = match choice {
            RespondChoice::No => ("No", "User rejected the command", format!("echo: {text}")),
            _ => ("Yes", "", "User rejected the command".to_string()),
        };
        assert!(
            r.option.starts_with(want),
            "round {round}: reported {:?}",
            r.option
        );
        let done = if outcome.is_empty() {
            format!("echo: {text}")
        } else {
            outcome.to_string()
        };
        wait_for(T, "the answer's outcome", || {
            let s = screen(&sb, &sid);
            assert!(
                !s.lines().rev().take(12).any(|l| l.contains(&not)),
                "round {round}: reported {:?} but the screen shows the other answer:\n{s}",
                r.option
            );
            s.contains(&done).then_some(())
        });
        sb.ok(&["kill", &sid]);
    }
}
