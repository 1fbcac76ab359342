//! The command line, as clap types.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ccd",
    version,
    about = "Run Claude Code sessions under PTYs and get back into any of them by id."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Without a command on a terminal: the dashboard (`ccd ui`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The command line, parsed. `ccd search` is parsed first by a tree
    /// that holds it alone ([`SearchOnly`]): clap's build copies each
    /// global option into every subcommand of the tree, and with all of
    /// ccd's that was most of the parse (~0.1 ms of a search answered by
    /// the daemon in ~3). Anything that tree does not parse (help, an
    /// error, another command) is parsed again by the whole one, which
    /// gives every message and exit code as before; what it does parse
    /// the whole tree parses the same way (the same global options before
    /// the same subcommand, then the same arguments).
    pub fn parse_args() -> Result<Cli, clap::Error> {
        Self::parse_from_args(std::env::args_os().collect())
    }

    /// [`Cli::parse_args`] of `args` (the program's name first).
    fn parse_from_args(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
        match Self::search_alone(&args) {
            Some(cli) => Ok(cli),
            None => Cli::try_parse_from(args),
        }
    }

    /// `args` parsed by the tree that holds `search` alone, if it parses
    /// them.
    fn search_alone(args: &[std::ffi::OsString]) -> Option<Cli> {
        if !args.iter().skip(1).any(|a| a == "search") {
            return None;
        }
        let SearchOnly {
            global,
            command: OnlySearch::Search(search),
        } = SearchOnly::try_parse_from(args).ok()?;
        Some(Cli {
            global,
            command: Some(Command::Search(search)),
        })
    }
}

/// [`Cli`] with `search` its one subcommand ([`Cli::parse_args`]); its
/// help and errors are never shown.
#[derive(Debug, Parser)]
#[command(name = "ccd")]
struct SearchOnly {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: OnlySearch,
}

#[derive(Debug, Subcommand)]
enum OnlySearch {
    Search(SearchArgs),
}

// Options every command takes. (A plain comment: clap would make a flattened
// struct's doc comment the help text of every command it is part of.)
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Claude Code's config dir (default: $CLAUDE_CONFIG_DIR, else ~/.claude).
    #[arg(long, global = true, value_name = "DIR")]
    pub claude_config_dir: Option<PathBuf>,
    /// ccd's own config file (default: $CCD_CONFIG, else ~/.config/ccd/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The private directory of the daemon's socket (default: $CCD_SOCKET_DIR,
    /// else $XDG_RUNTIME_DIR/ccd, else /tmp/ccd-<uid>).
    #[arg(long, global = true, value_name = "DIR")]
    pub socket_dir: Option<PathBuf>,
    /// The claude binary sessions run (default: $CCD_CLAUDE_BIN, the config
    /// file's claude_bin, else `claude` on PATH). Read by the daemon when it starts.
    #[arg(long, global = true, value_name = "PATH")]
    pub claude_bin: Option<PathBuf>,
    /// The machine to talk to: ssh://[user@]host[:port], a name from the
    /// config file's [hosts], or `local` (default: $CCD_HOST, else local).
    /// Runs the system ssh with `ccd dial-stdio` there. `ccd ls` takes it
    /// several times.
    #[arg(long = "host", global = true, value_name = "HOST")]
    pub hosts: Vec<String>,
    /// The ccd to run on a remote host (default: the config's remote_ccd,
    /// else `ccd` on the remote PATH).
    #[arg(long, global = true, value_name = "PATH")]
    pub remote_ccd: Option<String>,
    /// The hosts resolved from the above (by `commands::run`).
    #[arg(skip)]
    pub targets: Vec<crate::hosts::Target>,
}

/// Each subcommand's arguments are built only when that subcommand is
/// (`defer`): parsing `ccd attach` builds `attach` alone (a third of a
/// millisecond less before the first frame); help and completions build
/// them all.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// The dashboard: every session, what needs you first, a live preview,
    /// one key to act (also `ccd` alone on a terminal).
    #[command(
        after_help = "Keys: Enter attach · o observe · f fork · n new · k kill · a/d approve/deny · / filter · ? help · q quit"
    )]
    Ui {
        #[command(flatten)]
        key: DetachKeyArg,
    },
    /// List every Claude Code session on this machine, newest first.
    #[command(
        after_help = "Examples:\n  ccd ls\n  ccd ls --live\n  ccd ls --cwd ~/src/project --json | jq '.[0].session_id'"
    )]
    Ls(LsArgs),
    /// Find conversations by what was said in them: prompts, replies, tool
    /// calls, titles and summaries, in every transcript on this machine
    /// (and others with --host).
    #[command(after_help = SEARCH_HELP)]
    Search(SearchArgs),
    /// What conversations cost in tokens and dollars, read from every
    /// transcript on this machine (and `--host` machines): totals by day,
    /// week, month, session, folder or model.
    #[command(after_help = USAGE_HELP)]
    Usage(UsageArgs),
    /// Get into a session, whatever its state: attach if ccd runs it, resume
    /// it if it is dead, refuse (and say why) if it runs elsewhere.
    #[command(
        after_help = "Examples:\n  ccd attach 9cc17429          # id, unique prefix, or name\n  ccd attach api --fork       # branch it instead (safe while it runs elsewhere)\n  ccd attach 9cc1 --fresh-on-failure\n\nDetach with Ctrl-\\ (press it twice to send it to claude)."
    )]
    Attach(AttachArgs),
    /// Branch a session (claude --resume --fork-session in its original cwd).
    #[command(
        after_help = "Examples:\n  ccd fork 9cc17429\n  ccd fork api --detach        # print the new id, don't attach"
    )]
    Fork(ForkArgs),
    /// Watch a session read-only (a live mirror, or its transcript as it grows).
    #[command(after_help = "Examples:\n  ccd observe 9cc17429\n\nLeave with Ctrl-\\.")]
    Observe(ObserveArgs),
    /// Type a prompt into a session ccd holds and submit it.
    #[command(
        after_help = "Examples:\n  ccd send 9cc17429 \"run the tests and fix what fails\"\n  ccd send api /compact              # a slash command\n  ccd send api --shell \"make test\"  # runs at once in Claude Code's bash mode (!make test)\n  ccd send api --literal \"!x means not x\"  # words, never a command\n  ccd send api --force \"y\"      # even while a dialog is open\n\nClaude Code reads a leading `!` as a shell command and a leading `/` as a slash command: ccd refuses `!` unless --shell, and --literal never sends a command."
    )]
    Send(SendArgs),
    /// Stream events (sessions appearing, status changes, attention, exits) as lines.
    #[command(
        after_help = "Examples:\n  ccd events\n  ccd events --json | jq 'select(.type == \"session.attention\")'"
    )]
    Events(EventsArgs),
    /// Wait until a session needs you, is idle, or has exited (for scripts).
    #[command(
        after_help = "Examples:\n  ccd wait 9cc17429 --until needs-you\n  ccd wait api --until idle --timeout 600 && notify-send \"api is done\"\n  ccd --host devbox wait api --until exited\n\nPrints on return: the state and the session's full id, and for needs-you `prompt <id> <tool and command>` (a session ccd holds: the prompt's id is known, for `ccd approve --prompt`) or the reason.\n\nExit status: 0 the state holds (at once if it already did), 1 an error (no such session, the daemon went away), 2 a usage error, 3 the session ended before reaching it, 124 --timeout passed first."
    )]
    Wait(WaitArgs),
    /// One line on what needs you: sessions waiting for someone, busy, idle, per machine.
    #[command(
        after_help = "Examples:\n  ccd status\n  ccd status --format tmux      # set -g status-right '#(ccd status --format tmux)'\n  ccd status --host local --host devbox --format json\n\nNever starts a daemon (prints \"ccd: no daemon\" and exits 1); gives up on a machine after --deadline-ms."
    )]
    Status(StatusArgs),
    /// Desktop notifications here for the sessions of every machine watched (--host, else ui_hosts), with Approve/Deny/Open.
    #[command(
        after_help = "Examples:\n  ccd notify\n  ccd notify --host local --host devbox\n\nRuns until stopped. What notifies is the config's [notify] table (reasons, quiet_secs, rate_per_minute, ...). Approve and Deny answer exactly the prompt notified; a prompt answered meanwhile is refused and says so."
    )]
    Notify(NotifyArgs),
    /// Allow what the tool permission prompt of a session ccd holds asks.
    #[command(
        after_help = "Examples:\n  ccd approve 9cc17429\n  ccd approve api --always          # and do not ask again\n  ccd approve api --prompt 5f1c09a2b7e4d3c8   # only the prompt you saw"
    )]
    Approve {
        #[command(flatten)]
        target: RespondArgs,
        /// Choose "Yes, and always allow …" / "… don't ask again …".
        #[arg(long)]
        always: bool,
    },
    /// Refuse what the tool permission prompt of a session ccd holds asks.
    #[command(
        after_help = "Examples:\n  ccd deny 9cc17429\n  ccd deny api --message \"use the test runner instead\""
    )]
    Deny {
        #[command(flatten)]
        target: RespondArgs,
        /// What Claude should do instead, sent once it is back at its prompt.
        #[arg(long)]
        message: Option<String>,
    },
    /// Exempt a session from being stopped by ccd: idle reaping
    /// (reap_idle_minutes) and the memory budget (memory_budget,
    /// reap_min_idle_minutes).
    #[command(after_help = "Examples:\n  ccd pin 9cc17429")]
    Pin {
        /// Session id, unique prefix, or name.
        session: String,
    },
    /// Make a pinned session reapable again (idle limit, memory budget).
    #[command(after_help = "Examples:\n  ccd unpin 9cc17429")]
    Unpin {
        /// Session id, unique prefix, or name.
        session: String,
    },
    /// Check the claude CLI, Claude Code's file formats (drift), the daemon,
    /// the socket directory and the logs; each problem with a one-line fix.
    #[command(
        after_help = "Examples:\n  ccd doctor\n  ccd doctor --json | jq '.[] | select(.status != \"ok\")'"
    )]
    Doctor {
        /// One JSON array.
        #[arg(long)]
        json: bool,
        /// How many recent transcripts to check for format drift.
        #[arg(long, default_value_t = 20)]
        sample: usize,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Examples:\n  ccd completions bash > ~/.local/share/bash-completion/completions/ccd\n  ccd completions zsh > ~/.zfunc/_ccd"
    )]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Start a new claude session under ccd.
    #[command(
        after_help = "Examples:\n  ccd new                      # in the current directory, then attach\n  ccd new --cwd ~/src/api --name api --detach\n  ccd new -- --model opus      # extra arguments for claude"
    )]
    New(NewArgs),
    /// End a session ccd holds (SIGTERM, then SIGKILL after a grace period).
    #[command(after_help = "Examples:\n  ccd kill 9cc17429\n  ccd kill api --signal hup")]
    Kill(KillArgs),
    /// Bring back the sessions ccd held when the machine went down (listed
    /// as `lost` by `ccd ls`): each resumed in its folder, on its own
    /// conversation, with its model, permission mode, flags, name and pin.
    #[command(
        after_help = "Examples:\n  ccd restore              # every lost session\n  ccd restore 9cc17429 api\n  ccd restore --json\n\nA session whose folder or transcript is gone is reported and forgotten, never\nreplaced by a fresh one. Config: restore = \"ask\" (default), \"auto\" (at daemon\nstart) or \"off\"; restore_at_once = 4 (resumes at a time)."
    )]
    Restore {
        /// Lost sessions (id, unique prefix or name); all when none.
        sessions: Vec<String>,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Shrink a dead session's transcript without changing what Claude sees
    /// on resume (the original is kept; `--undo` puts it back).
    #[command(
        after_help = "Examples:\n  ccd trim 9cc17429 --dry-run   # what would go, by record type\n  ccd trim 9cc17429\n  ccd trim 9cc17429 --drop-file-history   # also /rewind checkpoints\n  ccd trim --undo 9cc17429\n\nOnly a dead session is trimmed. Dropped by default: what the real CLI was\nmeasured not to need on resume (request logs, cost state, prompt snapshots,\ndead branches, toolUseResult copies). Originals are kept in\n<state dir>/trim-backups/<session id>/."
    )]
    Trim(TrimArgs),
    /// Move dead conversations out of Claude Code's folder (out of reach of
    /// its cleanupPeriodDays sweep) into ccd's state dir, compressed; list
    /// them; put one back.
    #[command(
        after_help = "Examples:\n  ccd archive 9cc17429\n  ccd archive --older-than 25d        # before the default 30-day sweep\n  ccd archive --older-than 25d --trim # trimmed losslessly first\n  ccd archive --list\n  ccd archive --restore 9cc17429      # back where it was, not resumed\n\nMoved: the transcript, its sidecar folder (subagents, tool results) and its\nfile history, to <state dir>/archive/<session id>/. A session that may be\nrunning, or one written during the move, is left in place. ccd attach or\nccd fork of an archived session puts it back first and resumes it in its folder."
    )]
    Archive(ArchiveArgs),
    /// Print the current screen of a session ccd holds.
    #[command(after_help = "Examples:\n  ccd screen 9cc17429\n  ccd screen api --ansi")]
    Screen(ScreenArgs),
    /// Serve every session to a browser (a phone too): see, answer, type.
    #[command(
        after_help = "Examples:\n  ccd web                      # http://127.0.0.1:7878, prints the login URL and a QR code\n  ccd web --read-only\n  ccd web --revoke             # end every logged-in browser\n  ccd web --listen 0.0.0.0:7878 --tls-cert cert.pem --tls-key key.pem\n  ccd web --behind-proxy https://box.tailnet.ts.net   # behind tailscale serve\n\nFrom a phone: ssh -L 7878:127.0.0.1:7878 this-machine, or a TLS proxy such as tailscale serve; never open the port to the internet."
    )]
    Web(WebArgs),
    /// Run the daemon in the foreground, or control it.
    #[command(
        after_help = "Examples:\n  ccd daemon            # foreground (systemd, launchd, debugging)\n  ccd daemon status\n  ccd daemon stop"
    )]
    Daemon(DaemonArgs),
    /// Start the daemon at login (a systemd user unit, a launchd agent), or
    /// stop doing so, or say whether it does.
    #[command(
        after_help = "Examples:\n  ccd service install            # write, enable and start it\n  ccd service install --dry-run  # print the file, write nothing\n  ccd service status\n  ccd service uninstall          # held sessions keep running\n\nExit status: install 0 enabled (and started), 3 the file written but no user service manager answered (the commands to run are printed); status 0 installed, 3 not installed; 1 an error."
    )]
    Service(ServiceArgs),
    /// Bridge stdin/stdout to the daemon's socket, starting the daemon if
    /// needed: what `--host` runs on the remote machine through ssh.
    #[command(name = "dial-stdio")]
    DialStdio,
    /// The per-session holder process (started by the daemon).
    #[command(name = "__holder", hide = true)]
    Holder,
}

// Which prompt `ccd approve` / `ccd deny` answer.
#[derive(Debug, Args)]
pub struct RespondArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// Answer only this prompt (the id `ccd events` or `ccd ls --json`
    /// showed); refused, with nothing typed, if the screen shows another.
    #[arg(long)]
    pub prompt: Option<String>,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// The prompt.
    pub text: String,
    /// Type it even when the session is not at its prompt.
    #[arg(long)]
    pub force: bool,
    /// Run TEXT as a shell command in Claude Code's bash mode (`!`): without
    /// it, text starting with `!` is refused.
    #[arg(long, conflicts_with = "literal")]
    pub shell: bool,
    /// Send TEXT as words for Claude, never a command: a leading `!` is
    /// typed after a space; a leading `/` is refused.
    #[arg(long)]
    pub literal: bool,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Only these event types (repeatable), e.g. --type session.attention.
    #[arg(long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
}

/// The states `ccd wait --until` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UntilState {
    /// A permission prompt, a question or another dialog waits for a person.
    NeedsYou,
    /// At its prompt, running nothing.
    Idle,
    /// No process runs it.
    Exited,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// The state to wait for.
    #[arg(long, value_enum)]
    pub until: UntilState,
    /// Give up after SECS (exit status 124); fractions allowed.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub timeout: Option<std::time::Duration>,
}

/// A number of seconds (`1.5` too), at most a year.
fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("not a number of seconds: {s}"))?;
    if !(0.0..=31_536_000.0).contains(&secs) {
        return Err(format!("{s}: between 0 and 31536000 seconds"));
    }
    std::time::Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

/// How `ccd status` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum StatusFormat {
    /// One line of text.
    #[default]
    Plain,
    /// One line with tmux `#[fg=…]` styles, for `status-right`.
    Tmux,
    /// One JSON object.
    Json,
}

/// `ccd notify` has no options of its own (the machines are `--host`).
#[derive(Debug, Args)]
pub struct NotifyArgs {}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// plain, tmux or json.
    #[arg(long, value_enum, default_value_t = StatusFormat::Plain)]
    pub format: StatusFormat,
    /// How long to wait for the machines in all, in milliseconds; one
    /// that has not answered by then is shown as `?`.
    #[arg(long, value_name = "MS", default_value_t = 1500)]
    pub deadline_ms: u64,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// One JSON array, for scripts.
    #[arg(long)]
    pub json: bool,
    /// Only sessions a process may be running (live or unknown).
    #[arg(long)]
    pub live: bool,
    /// Only sessions whose cwd is DIR or below it.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Leave out what each live session costs (the MEM and CPU columns,
    /// `cost` in --json): nothing is measured.
    #[arg(long)]
    pub no_cost: bool,
}

/// `ccd usage --help`'s closing text.
const USAGE_HELP: &str = "Examples:
  ccd usage                          # tokens and dollars by day
  ccd usage --by model --since 2026-11-01
  ccd usage --by session --json | jq '.rows[0]'
  ccd usage --host local --host build-box --by month

Counted: each assistant message's usage (input, output, cache writes, cache reads) in every transcript under the Claude config folder, subagents' included; a streamed message once (by message and request id, the copy with the most tokens, as ccusage counts). Dollars from the built-in price table (its date in --json) and the config's [prices.\"model-id\"]; a model it does not name is listed as unpriced and adds no dollars. Days are local dates (--utc: UTC); weeks start on Sunday. Only bytes appended since the last run are read (a cache in the state dir). Needs no daemon.";

/// `ccd search --help`'s closing text.
const SEARCH_HELP: &str = "Examples:
  ccd search auth bug                  # every word, in one message
  ccd search '\"token refresh\" 401'     # a quoted phrase and a word
  ccd search --regex 'fix(ed)? .*auth' --role user --since 7d
  ccd search 認証 --dead --json | jq '.[0].session_id'
  ccd search --host local --host devbox auth bug

Matching: case-insensitive substrings of a normalized form (fullwidth ASCII as ASCII, Unicode lowercase), so words need no spaces around them (CJK).
Ranking: one line per session, its best message: title 3, prompt or summary 2, reply or tool call 1, ×1.5 when the match is a whole word, plus ln(1 + its matching messages); divided by (1 + age in days / 30) of its newest match. Ties: newest first.
Searched: what people and Claude said and the tools it called (commands, paths, inputs); not tool output, images, or JSON keys and ids. Needs no daemon.
Index: each search keeps a search index in the state dir (search.idx) up to date as it answers, reading only what transcripts gained since (a trimmed or replaced one again, a deleted one dropped); the first search builds it (about 2 s per 400 MB of transcripts). One that is damaged or of another version is rebuilt; while another search is updating it, the index as saved answers and files changed since are read whole. --rebuild-index builds it again from scratch; --no-index reads every transcript and leaves the index alone.
--host (several allowed, `local` for this machine): each other machine runs `ccd search --json` over ssh; the rows are merged by score, and a machine that cannot be reached is named (exit 1) while the others answer.";

// Arguments of `ccd usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Rows: day, week, month, session, folder or model.
    #[arg(long, value_name = "GROUP", default_value = "day", value_parser = ["day", "week", "month", "session", "folder", "model"])]
    pub by: String,
    /// From this date on (2026-11-01 or 20261101; local date).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Up to this date, included.
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// Dates in UTC rather than this machine's offset.
    #[arg(long)]
    pub utc: bool,
    /// One JSON object, for scripts.
    #[arg(long)]
    pub json: bool,
}

// Arguments of `ccd search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words (all must occur in one message) and "quoted phrases"; with
    /// --regex, one pattern.
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
    /// QUERY is a regular expression (Rust regex syntax, case-insensitive).
    #[arg(long)]
    pub regex: bool,
    /// Only sessions whose cwd is DIR or below it.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Only messages since: 30m, 12h, 7d, 2w, a date (2026-11-01) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only sessions a process may be running (live or unknown).
    #[arg(long, conflicts_with = "dead")]
    pub live: bool,
    /// Only sessions nothing runs (resumable).
    #[arg(long)]
    pub dead: bool,
    /// Only messages of this role: user, assistant, tool, title, summary (repeatable).
    #[arg(long, value_name = "ROLE")]
    pub role: Vec<String>,
    /// At most N sessions (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// One JSON array, for scripts.
    #[arg(long)]
    pub json: bool,
    /// Build the search index in the state dir again from scratch first.
    #[arg(long, conflicts_with = "no_index")]
    pub rebuild_index: bool,
    /// Read every transcript; neither use nor update the search index.
    #[arg(long)]
    pub no_index: bool,
}

// How to leave an attached session.
#[derive(Debug, Args, Clone)]
pub struct DetachKeyArg {
    /// The detach key (default ctrl-\\, or the config file's detach_key).
    #[arg(long, value_name = "KEY")]
    pub detach_key: Option<String>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// Fork the session and attach to the fork.
    #[arg(long)]
    pub fork: bool,
    /// If resuming fails, start a fresh session in the same directory
    /// (says so, naming the original transcript).
    #[arg(long)]
    pub fresh_on_failure: bool,
    #[command(flatten)]
    pub key: DetachKeyArg,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// Print the new session id and return instead of attaching.
    #[arg(long, short)]
    pub detach: bool,
    #[command(flatten)]
    pub key: DetachKeyArg,
}

#[derive(Debug, Args)]
pub struct ObserveArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// How many earlier messages to show first (sessions running elsewhere).
    #[arg(long, default_value_t = 10)]
    pub last: usize,
    #[command(flatten)]
    pub key: DetachKeyArg,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Working directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// A name to use instead of the id.
    #[arg(long)]
    pub name: Option<String>,
    /// Print the session id and return instead of attaching.
    #[arg(long, short)]
    pub detach: bool,
    /// Leave Claude Code's folder-trust dialog to you.
    #[arg(long)]
    pub no_auto_trust: bool,
    /// Extra arguments for claude (after `--`).
    #[arg(last = true)]
    pub claude_args: Vec<String>,
    #[command(flatten)]
    pub key: DetachKeyArg,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// term (default), hup, or kill.
    #[arg(long, default_value = "term")]
    pub signal: String,
    /// Milliseconds before SIGKILL follows term/hup.
    #[arg(long, default_value_t = 3000)]
    pub grace_ms: u64,
}

#[derive(Debug, Args)]
pub struct TrimArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// Only print what would go, by record type (records and bytes).
    #[arg(long, conflicts_with = "undo")]
    pub dry_run: bool,
    /// Also drop file-history records: loses /rewind's checkpoints.
    #[arg(long, conflicts_with = "undo")]
    pub drop_file_history: bool,
    /// Keep only what follows the last compaction boundary.
    #[arg(long, conflicts_with = "undo")]
    pub before_compact: bool,
    /// Trim despite record types ccd does not know (they are kept).
    #[arg(long, conflicts_with = "undo")]
    pub force: bool,
    /// Put the original back (the newest backup), byte for byte.
    #[arg(long)]
    pub undo: bool,
    /// The result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// Session ids or unique prefixes.
    pub sessions: Vec<String>,
    /// Also every dead conversation last written longer ago than this
    /// (e.g. 25d, 36h, 2w).
    #[arg(long, value_name = "AGE", value_parser = crate::commands::archive_age)]
    pub older_than: Option<std::time::Duration>,
    /// Trim each transcript losslessly first (as ccd trim).
    #[arg(long)]
    pub trim: bool,
    /// Only print the ids that would be archived.
    #[arg(long)]
    pub dry_run: bool,
    /// List the archived conversations.
    #[arg(long, conflicts_with_all = ["sessions", "older_than", "restore"])]
    pub list: bool,
    /// Put an archived conversation back where it was (without resuming).
    #[arg(long, value_name = "SESSION", conflicts_with_all = ["sessions", "older_than"])]
    pub restore: Option<String>,
    /// The result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ScreenArgs {
    /// Session id, unique prefix, or name.
    pub session: String,
    /// With colours and attributes (escape sequences).
    #[arg(long)]
    pub ansi: bool,
}

#[derive(Debug, Args)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub action: Option<DaemonAction>,
    /// Started by a client: log to the file only.
    #[arg(long, hide = true)]
    pub background: bool,
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write the service file (this ccd, `daemon`, the global options and
    /// PATH, CLAUDE_CONFIG_DIR and CCD_* from here), enable it and start it.
    Install {
        /// Replace a service file that differs from the one ccd would write.
        #[arg(long)]
        force: bool,
        /// Print the file and where it would go; write nothing.
        #[arg(long, alias = "print")]
        dry_run: bool,
    },
    /// Stop the service's daemon (held sessions keep running), disable it
    /// and remove its file.
    Uninstall,
    /// Installed? Enabled, running, which binary (still there?).
    Status {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DaemonAction {
    /// Is a daemon running? Its pid, version, socket, sessions.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Stop the daemon (sessions keep running; the next daemon adopts them).
    Stop {
        /// Also end every session ccd holds.
        #[arg(long)]
        kill_sessions: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Each command's `--help` opens with a summary of its own. A flattened
    /// struct's doc comment once became the summary of every command it is
    /// part of: `ccd attach --help` (and `new`, `fork`, `observe`, `ui`)
    /// opened with "How to leave an attached session", `approve` and `deny`
    /// with "Which prompt …".
    #[test]
    fn each_command_s_help_opens_with_a_summary_of_its_own() {
        let mut cli = Cli::command();
        cli.build();
        let mut seen: Vec<(String, String)> = Vec::new();
        for sub in cli.get_subcommands() {
            let name = sub.get_name().to_string();
            let about = sub
                .get_about()
                .map(|a| a.to_string())
                .unwrap_or_else(|| panic!("`ccd {name}` has no summary"));
            let help = sub.clone().render_long_help().to_string();
            assert_eq!(help.lines().next(), Some(about.as_str()), "ccd {name}");
            if let Some((other, _)) = seen.iter().find(|(_, a)| *a == about) {
                panic!("`ccd {name}` and `ccd {other}` open with the same line: {about:?}");
            }
            seen.push((name, about));
        }
    }

    /// `ccd pin` keeps a session from both of ccd's stopping rules, and
    /// its help names the keys of each (as `session.pin` does).
    #[test]
    fn pin_help_names_the_idle_limit_and_the_memory_budget() {
        let mut cli = Cli::command();
        cli.build();
        for name in ["pin", "unpin"] {
            let sub = cli
                .find_subcommand(name)
                .unwrap_or_else(|| panic!("no `ccd {name}`"));
            let help = sub.clone().render_long_help().to_string();
            let want: &[&str] = if name == "pin" {
                &[
                    "reap_idle_minutes",
                    "memory_budget",
                    "reap_min_idle_minutes",
                ]
            } else {
                &["idle", "memory budget"]
            };
            for key in want {
                assert!(
                    help.contains(key),
                    "`ccd {name} --help` lacks {key}: {help}"
                );
            }
        }
    }
}

#[derive(Debug, Args)]
pub struct WebArgs {
    /// Where to listen (default: the config's web_listen, else
    /// 127.0.0.1:7878). Beyond loopback, TLS or --behind-proxy is required.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Serve a page that can look but not act.
    #[arg(long)]
    pub read_only: bool,
    /// End every session cookie (of a running server too) and exit.
    #[arg(long)]
    pub revoke: bool,
    /// TLS certificate chain, PEM (default: the config's web_tls_cert).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key, PEM (default: the config's web_tls_key).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The https:// origin of a TLS-terminating proxy in front (e.g.
    /// `tailscale serve`).
    #[arg(long, value_name = "URL")]
    pub behind_proxy: Option<String>,
    /// Print the login URL (and its QR code) and exit.
    #[arg(long)]
    pub print_url: bool,
}

#[cfg(test)]
mod search_alone {
    use super::*;

    fn argv(words: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("ccd")
            .chain(words.iter().copied())
            .map(Into::into)
            .collect()
    }

    /// What the one-subcommand tree parses, the whole tree parses the
    /// same; and the usual searches take that way.
    #[test]
    fn search_alone_parses_as_the_whole_tree_does() {
        let usual: &[&[&str]] = &[
            &["search", "auth", "bug"],
            &["search", "\"a phrase\"", "--json"],
            &[
                "search", "x", "--limit", "5", "--role", "user", "--role", "tool",
            ],
            &[
                "search", "--regex", "a.b", "--since", "7d", "--live", "--cwd", "/p",
            ],
            &["--socket-dir", "/s", "search", "x", "--config", "/c"],
            &["--host", "search", "search", "x"],
            &["search", "--", "--json", "-x"],
            &["search", "x", "--no-index"],
        ];
        for words in usual {
            let args = argv(words);
            let alone = Cli::search_alone(&args)
                .unwrap_or_else(|| panic!("{words:?} not parsed by search alone"));
            let whole = Cli::try_parse_from(&args).expect("the whole tree parses it");
            assert_eq!(format!("{alone:?}"), format!("{whole:?}"), "{words:?}");
        }
        // Not for the one-subcommand tree: the whole tree's answer, error
        // or not, whatever the other says.
        let other: &[&[&str]] = &[
            &["search", "--help"],
            &["help", "search"],
            &["search"],
            &["search", "x", "--limit", "0"],
            &["search", "x", "--live", "--dead"],
            &["--host", "search", "ls"],
            &["ls", "search"],
            &["--version", "search", "x"],
            &["search", "x", "--version"],
            &["send", "a", "search"],
        ];
        for words in other {
            let args = argv(words);
            let whole = Cli::try_parse_from(&args);
            let got = Cli::parse_from_args(args);
            match (got, whole) {
                (Ok(g), Ok(w)) => assert_eq!(format!("{g:?}"), format!("{w:?}"), "{words:?}"),
                (Err(g), Err(w)) => {
                    assert_eq!(g.kind(), w.kind(), "{words:?}");
                    assert_eq!(g.to_string(), w.to_string(), "{words:?}");
                }
                (g, w) => panic!("{words:?}: {g:?} against {w:?}"),
            }
        }
    }
}
