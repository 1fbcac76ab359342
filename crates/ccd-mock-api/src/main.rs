//! `ccd-mock-api`: a loopback server that imitates the Anthropic Messages
//! API well enough for the real Claude Code CLI to run offline in tests.
//!
//!     ccd-mock-api [--port N] [--log FILE] [--input-tokens N]
//!                  [--cache-creation-input-tokens N] [--cache-read-input-tokens N]
//!                  [--output-tokens N] [--reply-prefix TEXT] [--event-delay-ms N]
//!                  [--log-bodies] [--exit-on-stdin-eof]
//!
//! Every figure may also come from the environment (`CCD_MOCK_INPUT_TOKENS`,
//! `CCD_MOCK_CACHE_CREATION_INPUT_TOKENS`, `CCD_MOCK_CACHE_READ_INPUT_TOKENS`,
//! `CCD_MOCK_OUTPUT_TOKENS`, `CCD_MOCK_REPLY_PREFIX`, `CCD_MOCK_EVENT_DELAY_MS`);
//! flags win. Binds 127.0.0.1 only. The first line on stdout is
//! `listening on 127.0.0.1:<port>`.
//!
//! Each connection gets a thread; each request is logged (stderr, and as a
//! JSON line in `--log FILE`).

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

mod api;
mod http;

use std::io::{BufReader, BufWriter, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: ccd-mock-api [--port N] [--log FILE] [--input-tokens N] \
[--cache-creation-input-tokens N] [--cache-read-input-tokens N] [--output-tokens N] \
[--reply-prefix TEXT] [--event-delay-ms N] [--log-bodies] [--exit-on-stdin-eof]";

struct Args {
    port: u16,
    log: Option<String>,
    config: api::Config,
    exit_on_stdin_eof: bool,
}

fn env_u64(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut usage = api::Usage {
        input_tokens: env_u64("CCD_MOCK_INPUT_TOKENS", 1200)?,
        cache_creation_input_tokens: env_u64("CCD_MOCK_CACHE_CREATION_INPUT_TOKENS", 300)?,
        cache_read_input_tokens: env_u64("CCD_MOCK_CACHE_READ_INPUT_TOKENS", 4500)?,
        output_tokens: env_u64("CCD_MOCK_OUTPUT_TOKENS", 42)?,
    };
    let mut reply_prefix =
        std::env::var("CCD_MOCK_REPLY_PREFIX").unwrap_or_else(|_| "ACK: ".into());
    let mut delay_ms = env_u64("CCD_MOCK_EVENT_DELAY_MS", 0)?;
    let mut port = 0u16;
    let mut log = None;
    let mut exit_on_stdin_eof = false;
    let mut log_bodies = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let mut num = || -> Result<u64, String> {
            let v = value()?;
            v.parse()
                .map_err(|_| format!("{name}: {v:?} is not a number"))
        };
        match name.as_str() {
            "--port" => {
                port = u16::try_from(num()?).map_err(|_| "--port out of range".to_string())?
            }
            "--log" => log = Some(value()?),
            "--input-tokens" => usage.input_tokens = num()?,
            "--cache-creation-input-tokens" => usage.cache_creation_input_tokens = num()?,
            "--cache-read-input-tokens" => usage.cache_read_input_tokens = num()?,
            "--output-tokens" => usage.output_tokens = num()?,
            "--reply-prefix" => reply_prefix = value()?,
            "--event-delay-ms" => delay_ms = num()?,
            "--exit-on-stdin-eof" => exit_on_stdin_eof = true,
            "--log-bodies" => log_bodies = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Args {
        port,
        log,
        config: api::Config {
            usage,
            reply_prefix,
            event_delay: Duration::from_millis(delay_ms),
            log_bodies,
        },
        exit_on_stdin_eof,
    })
}

fn serve(server: &api::Server, stream: TcpStream) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // An idle keep-alive connection is dropped after a while.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(300)));
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut r = BufReader::new(stream);
    let mut w = BufWriter::new(write_half);
    loop {
        let req = match http::read_request(&mut r, &mut w) {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut
                {
                    eprintln!("ccd-mock-api: {peer}: bad request: {e}");
                    let _ = http::write_response(
                        &mut w,
                        400,
                        "text/plain",
                        &[],
                        b"bad request",
                        false,
                        false,
                    );
                }
                return;
            }
        };
        let keep = req.keep_alive();
        if let Err(e) = server.handle(&req, &mut w, keep) {
            eprintln!("ccd-mock-api: {peer}: write failed: {e}");
            return;
        }
        if !keep {
            return;
        }
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ccd-mock-api: {e}");
            std::process::exit(2);
        }
    };
    let log = match &args.log {
        Some(p) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("ccd-mock-api: cannot open log {p}: {e}");
                std::process::exit(2);
            }
        },
        None => None,
    };
    let listener = match TcpListener::bind(("127.0.0.1", args.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ccd-mock-api: cannot bind 127.0.0.1:{}: {e}", args.port);
            std::process::exit(1);
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ccd-mock-api: local_addr: {e}");
            std::process::exit(1);
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {addr}");
        let _ = out.flush();
    }
    eprintln!(
        "ccd-mock-api: listening on {addr}, usage {:?}",
        args.config.usage
    );
    if args.exit_on_stdin_eof {
        std::thread::spawn(|| {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
            eprintln!("ccd-mock-api: stdin closed, exiting");
            std::process::exit(0);
        });
    }
    let server = Arc::new(api::Server::new(args.config, log));
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let server = server.clone();
                std::thread::spawn(move || serve(&server, stream));
            }
            Err(e) => eprintln!("ccd-mock-api: accept: {e}"),
        }
    }
}
