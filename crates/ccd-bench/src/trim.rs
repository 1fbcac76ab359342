//! `ccd-bench trim`: generate a real-shaped transcript of the size asked
//! (2.1.332's record shapes: per turn a prompt snapshot, the request shape,
//! blobs and logs, a tool call with its `toolUseResult`, cost state,
//! file history; a rewound branch every 40 turns), time `cp` of it (and
//! the copy's fsync) as the disk's baseline, then trim it in a child
//! process (`__trim`), on a thread of its own as the daemon's blocking
//! pool does, and report the time, MB/s, and the memory the daemon would
//! see: the peak RSS (`VmHWM`) above the child's RSS before the trim, and
//! what it keeps after (the RSS after the trim above the RSS before).

use anyhow::{bail, Context};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Size of the generated transcript, in MB (10^6 bytes).
    #[arg(long, default_value_t = 1000)]
    pub size_mb: u64,
    /// Where to write it (default: a temp folder, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The worst shape for the trim's index instead: many small records
    /// with uuids (30 `progress` records of ~300 bytes per tool call, as
    /// older CLIs wrote), which a trim keeps.
    #[arg(long)]
    pub small_records: bool,
}

#[derive(clap::Args)]
pub struct ChildArgs {
    pub path: PathBuf,
    pub backups: PathBuf,
}

fn uuid(n: u64, salt: u64) -> String {
    let a = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
    let b = n ^ salt.rotate_left(17);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) as u16,
        (a as u16) & 0xfff,
        (b >> 48) as u16 & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

fn filler(n: usize, seed: u64) -> String {
    // Text-like, varied, JSON-safe.
    const WORDS: &[&str] = &[
        "the", "tool", "returns", "a", "list", "of", "files", "under", "src", "and", "tests",
        "with", "their", "sizes", "function", "parse", "config", "error", "handling", "value",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut x = seed | 1;
    while s.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s.truncate(n);
    s
}

/// Writes a transcript of about `bytes` bytes; returns (lines, turns).
pub fn generate(path: &Path, bytes: u64, small: bool) -> anyhow::Result<(u64, u64)> {
    let sid = "b3c4d5e6-0000-4000-8000-000000000001";
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let written = std::cell::Cell::new(0u64);
    let lines = std::cell::Cell::new(0u64);
    let n = std::cell::Cell::new(0u64);
    let mut parent: Option<String> = None;
    let mut turn = 0u64;
    let snapshot = filler(if small { 0 } else { 12_000 }, 7);
    let shape = filler(if small { 0 } else { 11_000 }, 9);
    let common = |kind: &str, uuid: &str, parent: &Option<String>| {
        serde_json::json!({"parentUuid": parent, "isSidechain": false, "type": kind, "uuid": uuid,
            "timestamp": "2026-12-01T10:00:00.000Z", "userType": "external", "entrypoint": "cli",
            "cwd": "/home/me/proj", "sessionId": sid, "version": "2.1.332", "gitBranch": "main"})
    };
    let emit = |w: &mut BufWriter<std::fs::File>, v: serde_json::Value| -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(&v)?;
        line.push(b'\n');
        w.write_all(&line)?;
        written.set(written.get() + line.len() as u64);
        lines.set(lines.get() + 1);
        Ok(())
    };
    emit(
        &mut w,
        serde_json::json!({"type":"permission-mode","permissionMode":"acceptEdits","sessionId":sid}),
    )?;
    while written.get() < bytes {
        turn += 1;
        let next = |p: &mut Option<String>| {
            n.set(n.get() + 1);
            let u = uuid(n.get(), 0x5eed);
            let prev = p.replace(u.clone());
            (u, prev)
        };
        // A rewound branch every 40 turns: one turn hanging off the
        // current leaf, then the chain continues from the leaf.
        if turn.is_multiple_of(40) && !small {
            let mut side = parent.clone();
            let (u, p) = next(&mut side);
            let mut r = common("user", &u, &p);
            r["message"] = serde_json::json!({"role":"user","content": format!("rewound {turn}")});
            emit(&mut w, r)?;
            let (u, p) = next(&mut side);
            let mut r = common("assistant", &u, &p);
            r["message"] = serde_json::json!({"role":"assistant","content":[{"type":"text","text": filler(800, turn)}]});
            emit(&mut w, r)?;
        }
        emit(
            &mut w,
            serde_json::json!({"type":"file-history-snapshot","messageId": uuid(n.get() + 1, 0x5eed),
            "snapshot":{"messageId": uuid(n.get() + 1, 0x5eed),"trackedFileBackups":{},"timestamp":"2026-12-01T10:00:00.000Z"},"isSnapshotUpdate":false}),
        )?;
        let (u, p) = next(&mut parent);
        let mut r = common("user", &u, &p);
        r["message"] = serde_json::json!({"role":"user","content": format!("turn {turn}: {}", filler(200, turn))});
        emit(&mut w, r)?;
        let (u, p) = next(&mut parent);
        let mut r = common("attachment", &u, &p);
        r["attachment"] = serde_json::json!({"type":"prompt_snapshot","content": snapshot});
        emit(&mut w, r)?;
        emit(
            &mut w,
            serde_json::json!({"type":"api-request-shape","sessionId":sid,"shapeHash": format!("{turn:016x}"),
            "timestamp":"2026-12-01T10:00:00.000Z","version":"2.1.332","shape": shape}),
        )?;
        emit(
            &mut w,
            serde_json::json!({"type":"api-request-blob","sessionId":sid,"hash":format!("{turn:x}"),"message":{"role":"user","content": filler(150, turn)}}),
        )?;
        emit(
            &mut w,
            serde_json::json!({"type":"api-request","sessionId":sid,"id":format!("req_{turn}"),"timestamp":"2026-12-01T10:00:00.000Z",
            "version":"2.1.332","querySource":"repl_main_thread","params": filler(900, turn)}),
        )?;
        let tool = format!("toolu_{turn:020}");
        let (u, p) = next(&mut parent);
        let mut r = common("assistant", &u, &p);
        r["message"] = serde_json::json!({"id": format!("msg_{turn}"),"type":"message","role":"assistant","model":"claude-opus-4",
            "content":[{"type":"tool_use","id": tool,"name":"Bash","input":{"command":"ls -la"}}],
            "usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":20000,"output_tokens":50}});
        emit(&mut w, r)?;
        if small {
            for i in 0..30u64 {
                let mut side = Some(u.clone());
                let (pu, pp) = next(&mut side);
                let mut r = serde_json::json!({"parentUuid": pp, "type": "progress", "uuid": pu, "sessionId": sid,
                    "toolUseID": tool, "data": {"type": "bash_progress", "output": filler(60, turn * 31 + i)}});
                r["timestamp"] = "2026-12-01T10:00:00.000Z".into();
                emit(&mut w, r)?;
            }
        }
        let out = filler(if small { 200 } else { 3000 }, turn * 3);
        let (u, p) = next(&mut parent);
        let mut r = common("user", &u, &p);
        r["message"] = serde_json::json!({"role":"user","content":[{"type":"tool_result","tool_use_id": tool,"content": out}]});
        r["toolUseResult"] = serde_json::json!({"stdout": out, "stderr": "", "interrupted": false});
        emit(&mut w, r)?;
        let (u, p) = next(&mut parent);
        let mut r = common("assistant", &u, &p);
        r["message"] = serde_json::json!({"id": format!("msg_{turn}b"),"type":"message","role":"assistant","model":"claude-opus-4",
            "content":[{"type":"text","text": filler(600, turn * 5)}],
            "usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":20000,"output_tokens":50}});
        emit(&mut w, r)?;
        let (u, p) = next(&mut parent);
        let mut r = common("system", &u, &p);
        r["subtype"] = "turn_duration".into();
        r["durationMs"] = 1234.into();
        emit(&mut w, r)?;
        emit(
            &mut w,
            serde_json::json!({"type":"last-prompt","lastPrompt": format!("turn {turn}"),"leafUuid": u,"sessionId":sid}),
        )?;
        emit(
            &mut w,
            serde_json::json!({"type":"mode","mode":"normal","sessionId":sid}),
        )?;
        emit(
            &mut w,
            serde_json::json!({"type":"atis-latch","atis":"","sessionId":sid}),
        )?;
        emit(
            &mut w,
            serde_json::json!({"type":"cost-state","sessionId":sid,"totalCostUSD":0.1,"modelUsage": filler(300, turn)}),
        )?;
    }
    let f = w.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()?;
    Ok((lines.get(), turn))
}

/// A `/proc/self/status` figure in kB (`VmHWM`, `VmRSS`). Elsewhere the
/// resident set through `ccd_testkit::procs`, the peak from `getrusage`
/// (`ru_maxrss`, bytes on macOS).
#[cfg(not(target_os = "linux"))]
fn status_kb(field: &str) -> u64 {
    if field == "VmHWM:" {
        use nix::sys::resource::{getrusage, UsageWho};
        let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else {
            return 0;
        };
        return u64::try_from(usage.max_rss()).unwrap_or(0) / 1024;
    }
    ccd_testkit::procs::rss_kb(std::process::id())
}

#[cfg(target_os = "linux")]
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The child: trims `path` on a thread of its own (as the daemon's
/// blocking pool does, with glibc's arena for that thread) and prints one
/// JSON line.
pub fn child(a: &ChildArgs) -> anyhow::Result<()> {
    let idle_kb = status_kb("VmRSS:");
    let t = Instant::now();
    let (path, backups) = (a.path.clone(), a.backups.clone());
    let r = std::thread::spawn(move || {
        let none = || None;
        ccd_claude::trim::trim(
            &path,
            &backups,
            &ccd_claude::trim::TrimOptions::default(),
            &none,
            None,
        )
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the trim thread panicked"))??;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({"secs": secs, "idle_kb": idle_kb, "hwm_kb": status_kb("VmHWM:"),
            "after_kb": status_kb("VmRSS:"), "before": r.bytes_before, "after": r.bytes_after,
            "relinked": r.relinked, "dropped": r.dropped.iter().map(|(k, c)| (k.clone(), c.bytes)).collect::<std::collections::BTreeMap<_,_>>()})
    );
    Ok(())
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let tmp;
    let dir = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let path = dir.join("b3c4d5e6-0000-4000-8000-000000000001.jsonl");
    let t = Instant::now();
    let (lines, turns) = generate(&path, a.size_mb * 1_000_000, a.small_records)?;
    let size = std::fs::metadata(&path)?.len();
    let mb = size as f64 / 1e6;
    println!(
        "generated {} ({mb:.0} MB, {lines} records, {turns} turns) in {:.1} s",
        path.display(),
        t.elapsed().as_secs_f64()
    );
    // The disk's baseline: cp, then the copy's fsync.
    let copy = dir.join("copy.jsonl");
    let t = Instant::now();
    let st = std::process::Command::new("cp")
        .arg(&path)
        .arg(&copy)
        .status()?;
    if !st.success() {
        bail!("cp failed");
    }
    let cp = t.elapsed().as_secs_f64();
    std::fs::File::open(&copy)?.sync_all()?;
    let cp_sync = t.elapsed().as_secs_f64();
    std::fs::remove_file(&copy)?;
    println!(
        "cp baseline: {cp:.2} s ({:.0} MB/s); with fsync {cp_sync:.2} s ({:.0} MB/s)",
        mb / cp,
        mb / cp_sync
    );
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .arg("__trim")
        .arg(&path)
        .arg(dir.join("backups"))
        .output()?;
    if !out.status.success() {
        bail!("trim failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let secs = v["secs"].as_f64().unwrap_or(0.0);
    let after = v["after"].as_u64().unwrap_or(0);
    let kb = |k: &str| v[k].as_f64().unwrap_or(0.0);
    println!(
        "trim: {secs:.2} s ({:.0} MB/s read), {mb:.0} MB → {:.0} MB; {:.2}× the time of cp+fsync (target < 2×)",
        mb / secs,
        after as f64 / 1e6,
        secs / cp_sync
    );
    println!(
        "memory: RSS before {:.1} MiB; peak (VmHWM) {:.1} MiB, {:.1} MiB above it (target ≤ 64); kept after {:.1} MiB above it",
        kb("idle_kb") / 1024.0,
        kb("hwm_kb") / 1024.0,
        (kb("hwm_kb") - kb("idle_kb")) / 1024.0,
        (kb("after_kb") - kb("idle_kb")) / 1024.0,
    );
    println!("dropped bytes by kind: {}", v["dropped"]);
    Ok(())
}
