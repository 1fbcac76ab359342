//! `ccd-bench pty --only web`: how soon a held session's PTY output
//! reaches a `ccd web` page, beside `ccd attach`'s keystroke echo of the
//! same session in the same run.
//!
//! The session runs `ccd-bench __echo` (each byte read comes back as one
//! letter at column 0). First `ccd attach` in a PTY: a key written to its
//! PTY, timed to the echo read back (the `echo` part's measure). Then
//! `ccd web --listen 127.0.0.1:0` on the same daemon, logged in with its
//! token like a browser (cookie, `Host`, `Origin`), a WebSocket watching
//! the session as the page does: a key given to the session
//! (`session.input` on the daemon's socket, as the page's Type does),
//! timed to the first `screen` frame that carries its echo. Both include
//! the key's way in (a PTY write and `session.input` respectively); the
//! web figure is PTY output → holder → daemon → `ccd web`'s screen model
//! → rendered rows → WebSocket frame received. Drawing that frame in a
//! browser is not included (`crates/ccd-web/tests/browser.rs`'s ignored
//! benchmark times the DOM). `ccd web` is ended by its pid.

use super::ccd::Ccd;
use super::term::{echo_pty, wait_file, Latency};
use super::{Ctx, Run};
use anyhow::Context;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// What the web part measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WebEcho {
    /// `ccd attach`: a key into its PTY → the echo out of it.
    pub attach: Latency,
    /// `ccd web`: a key by `session.input` → the WebSocket frame with the echo.
    pub web: Latency,
}

/// `ccd web`, ended by its pid when dropped.
struct Web(Child);

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The cookie `GET /?token=…` sets.
fn login(addr: &str, path: &str) -> anyhow::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    raw.lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .find_map(|l| l.split_once("ccd_web=").map(|(_, v)| v.to_string()))
        .and_then(|v| v.split(';').next().map(str::to_string))
        .with_context(|| format!("no cookie from the login: {raw}"))
}

/// Whether a WebSocket message is a `screen` frame of `sid` whose rows
/// carry `want`.
fn frame_has(msg: &str, sid: &str, want: &str) -> bool {
    if !msg.contains(want) {
        return false;
    }
    let Ok(v) = serde_json::from_str::<Value>(msg) else {
        return false;
    };
    if v["t"] != "screen" || v["session"] != sid {
        return false;
    }
    v["lines"].as_object().is_some_and(|rows| {
        rows.values().any(|runs| {
            runs.as_array().is_some_and(|runs| {
                runs.iter()
                    .any(|r| r["s"].as_str().is_some_and(|s| s.contains(want)))
            })
        })
    })
}

/// The echo through `ccd attach`, then through `ccd web`, on one session.
pub fn echo(cx: &Ctx) -> anyhow::Result<WebEcho> {
    let n = cx.samples;
    let dir = cx.dir("echo-web")?;
    let run = Run::new(&dir);
    let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, false)?;
    let res = (|| -> anyhow::Result<WebEcho> {
        let (sid, _) = c.new_session(&run.echo_args(), false)?;
        wait_file(&run.ready, Duration::from_secs(10))?;
        eprintln!("echo → ccd attach…");
        let mut client = c.attach_pty(&sid)?;
        c.wait_attached(&sid, 1)?;
        std::thread::sleep(Duration::from_millis(300));
        let attach = echo_pty(&mut client, n)?;
        client.kill(Duration::from_secs(2));
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.attached(&sid) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }

        eprintln!("echo → ccd web (WebSocket)…");
        let mut child = std::process::Command::new(&c.ccd)
            .args(["web", "--listen", "127.0.0.1:0"])
            .envs(c.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("web.log"))?)
            .spawn()
            .context("starting ccd web")?;
        let out = child.stdout.take().context("ccd web's stdout")?;
        let _web = Web(child);
        let mut lines = BufReader::new(out).lines();
        let first = lines.next().transpose()?.unwrap_or_default();
        let addr = first
            .strip_prefix("ccd web listening on ")
            .with_context(|| format!("ccd web said: {first}"))?
            .trim()
            .to_string();
        let url = lines.next().transpose()?.unwrap_or_default();
        let path = url
            .find("/?token=")
            .map(|i| url[i..].trim().to_string())
            .with_context(|| format!("no login URL: {url}"))?;
        std::thread::spawn(move || for _ in lines {});
        let cookie = login(&addr, &path)?;

        use tungstenite::client::IntoClientRequest;
        let mut req = format!("ws://{addr}/api/ws").into_client_request()?;
        let h = req.headers_mut();
        h.insert("Origin", format!("http://{addr}").parse()?);
        h.insert("Cookie", format!("ccd_web={cookie}").parse()?);
        let stream = TcpStream::connect(&addr)?;
        stream.set_nodelay(true)?;
        let (mut ws, _) = tungstenite::client(req, stream.try_clone()?)
            .map_err(|e| anyhow::anyhow!("the WebSocket: {e}"))?;
        ws.send(tungstenite::Message::text(
            json!({"t": "watch", "session": sid}).to_string(),
        ))?;
        // Reads text messages until `f` accepts one or `limit` passes.
        let mut until =
            |limit: Duration, f: &mut dyn FnMut(&str) -> bool| -> anyhow::Result<bool> {
                let deadline = Instant::now() + limit;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    stream.set_read_timeout(Some(left))?;
                    match ws.read() {
                        Ok(tungstenite::Message::Text(t)) => {
                            if f(t.as_str()) {
                                return Ok(true);
                            }
                        }
                        Ok(tungstenite::Message::Close(_)) => anyhow::bail!("the WebSocket closed"),
                        Ok(_) => {}
                        Err(tungstenite::Error::Io(e))
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            return Ok(false)
                        }
                        Err(e) => anyhow::bail!("the WebSocket: {e}"),
                    }
                }
            };
        anyhow::ensure!(
            until(Duration::from_secs(10), &mut |m| m
                .contains("\"full\":true"))?,
            "no full screen frame"
        );
        let mut api = c.api()?;
        let mut lat = Vec::with_capacity(n);
        let mut timeouts = 0;
        for i in 0..n + 20 {
            let b = b'a' + (i % 26) as u8;
            let reply = super::child::echo_reply(b);
            let want = String::from_utf8_lossy(&reply[..2]).into_owned();
            let t0 = Instant::now();
            api.call(
                "session.input",
                json!({"session": sid, "data": ccd_protocol::b64::encode(&[b])}),
            )?;
            let ok = until(Duration::from_secs(2), &mut |m| frame_has(m, &sid, &want))?;
            let took = t0.elapsed();
            if i >= 20 {
                if ok {
                    lat.push(took);
                } else {
                    timeouts += 1;
                }
            }
            anyhow::ensure!(timeouts < 20, "web echo: {timeouts} timeouts");
            // A typing gap, draining what else comes.
            until(Duration::from_millis(2), &mut |_| false)?;
        }
        let _ = ws.close(None);
        Ok(WebEcho {
            attach,
            web: Latency::from(lat, timeouts),
        })
    })();
    c.stop();
    res
}

#[cfg(test)]
mod tests {
    use super::frame_has;

    #[test]
    fn an_echo_counts_only_in_its_sessions_screen_rows() {
        let frame = r##"{"t":"screen","session":"s1","cols":80,"rows":24,"full":false,"lines":{"3":[{"s":"Á","fg":null,"bg":null,"b":false,"i":false,"u":false,"r":false}]}}"##;
        assert!(frame_has(frame, "s1", "Á"));
        assert!(!frame_has(frame, "s2", "Á"), "another session's frame");
        assert!(!frame_has(frame, "s1", "Â"), "another letter");
        let list = r#"{"t":"sessions","read_only":false,"machines":[],"sessions":[{"title":"Á"}]}"#;
        assert!(!frame_has(list, "s1", "Á"), "not a screen frame");
        assert!(!frame_has("{not json Á", "s1", "Á"));
    }
}
