//! The holder walks dialogs itself (holder protocol 3): `holder.submit`
//! types a prompt and sees it leave the box, `holder.respond` answers the
//! fake's permission prompt found by its label; a connection that did not
//! negotiate version 3 gets `method_not_found`, as an older holder answers.

mod common;

use std::time::Duration;

use ccd_holder::State;
use ccd_protocol::holder as h;
use ccd_protocol::methods::session::RespondChoice;
use ccd_protocol::ErrorCode;
use common::{start, wait_info, wait_screen, Env};

const T: Duration = Duration::from_secs(20);

fn code_of(e: ccd_holder::ClientError) -> i64 {
    match e {
        ccd_holder::ClientError::Rpc(r) => r.code,
        other => panic!("not an RPC error: {other}"),
    }
}

#[test]
fn the_holder_submits_and_answers_the_prompt_only_on_a_version_3_connection() {
    let env = Env::new();
    let (serve, mut c) = start(env.fake(&[("FAKE_CLAUDE_TRUST_VARIANT", "2.1.332")]));
    wait_info(&mut c, T, "ready", |i| i.state == State::Ready);

    // No hello: the connection speaks version 1, which has no walks.
    let respond = h::RespondParams {
        prompt: None,
        choice: RespondChoice::Yes,
        message: None,
    };
    let e = c
        .call::<h::Respond>(&respond)
        .expect_err("not on version 1");
    assert_eq!(code_of(e), ErrorCode::MethodNotFound.code());

    let mut w = ccd_holder::HolderClient::connect(&env.socket()).expect("connect");
    // Hello negotiates the holder's newest version, which has the walks
    // (version 3 added them; 4, focus reports, kept them).
    assert_eq!(w.hello().expect("hello"), h::HOLDER_PROTOCOL_VERSION);
    // No prompt on screen: refused, nothing typed.
    let e = w.call::<h::Respond>(&respond).expect_err("no prompt");
    assert_eq!(code_of(e), ErrorCode::PromptNotShown.code());

    // A prompt submitted, seen to leave the box.
    let r = w
        .call::<h::Submit>(&h::SubmitParams {
            text: "perm touch walked.txt".into(),
            force: false,
        })
        .expect("submitted");
    assert_eq!(r.submitted, Some(true), "{r:?}");
    assert_eq!(r.removed, 0);
    wait_screen(&mut c, T, "Do you want to proceed?");

    // Answered by label: the pointer is on "Yes" already, so one Enter.
    let before = c.info().expect("info").connections.expect("counted");
    let a = w.call::<h::Respond>(&respond).expect("answered");
    assert_eq!(a.option, "Yes", "{a:?}");
    assert_eq!((a.arrows, a.enters), (0, 1), "{a:?}");
    assert_eq!(a.prompt.len(), 16, "{a:?}");
    wait_screen(&mut c, T, "echo: perm touch walked.txt");
    // The walk opened no connection of its own.
    let after = c.info().expect("info").connections.expect("counted");
    assert_eq!(after, before);

    // The same prompt id again: it is gone, refused.
    let again = h::RespondParams {
        prompt: Some(a.prompt.clone()),
        ..respond
    };
    let e = w.call::<h::Respond>(&again).expect_err("answered already");
    assert_eq!(code_of(e), ErrorCode::PromptNotShown.code());

    // Away from the prompt a submit types nothing unless forced; at the
    // prompt a text of controls only is refused.
    let e = w
        .call::<h::Submit>(&h::SubmitParams {
            text: "\x1b[Z".into(),
            force: false,
        })
        .expect_err("controls only");
    assert_eq!(code_of(e), ErrorCode::InvalidParams.code());

    c.kill(ccd_holder::KillSignal::Term, None).expect("kill");
    c.collect(T).expect("collected");
    serve.join().expect("serve thread").expect("served");
}
