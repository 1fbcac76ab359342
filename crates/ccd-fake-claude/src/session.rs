//! Which session this process runs: new, resumed, forked, or an error to print — decided
//! after the trust dialog, before the registry entry is written.

use std::path::{Path, PathBuf};

use crate::args::Args;
use crate::settings::{Settings, Variant};
use crate::transcript::{self, History, Meta, Transcript};
use crate::util::{is_uuid, uuid_v4};

pub enum Start {
    New {
        id: String,
    },
    Resume {
        id: String,
        path: PathBuf,
        history: History,
    },
    Fork {
        id: String,
        from: String,
        history: History,
    },
}

impl Start {
    pub fn session_id(&self) -> &str {
        match self {
            Start::New { id } | Start::Resume { id, .. } | Start::Fork { id, .. } => id,
        }
    }

    pub fn history(&self) -> Option<&History> {
        match self {
            Start::New { .. } => None,
            Start::Resume { history, .. } | Start::Fork { history, .. } => Some(history),
        }
    }

    /// The transcript writer for this start (nothing is written before the first turn).
    pub fn transcript(&self, config: &Path, meta: Meta) -> Transcript {
        match self {
            Start::New { id } => Transcript::fresh(config, id, meta),
            Start::Resume { id, path, history } => {
                Transcript::resumed(path.clone(), id, history, meta)
            }
            Start::Fork { id, from, history } => {
                Transcript::forked(config, id, from, history, meta)
            }
        }
    }
}

/// Applies the CLI's rules for `--resume`, `--fork-session` and `--session-id`.
/// `Err` holds the message the real CLI prints before exiting with status 1.
pub fn plan(s: &Settings, args: &Args, cwd: &Path) -> Result<Start, String> {
    if let Some(sid) = &args.resume {
        let not_found = || format!("No conversation found with session ID: {sid}");
        let path = transcript::find(&s.config_dir, sid).ok_or_else(not_found)?;
        let history = History::read(&path).map_err(|_| not_found())?;
        if s.resume_cwd_rule == Variant::V2_1_173 {
            if let Some(recorded) = &history.cwd {
                if Path::new(recorded) != cwd {
                    return Err(not_found());
                }
            }
        }
        if s.prompt_too_long {
            return Err("Prompt is too long".to_string());
        }
        return Ok(if args.fork_session {
            Start::Fork {
                id: uuid_v4(),
                from: sid.clone(),
                history,
            }
        } else {
            Start::Resume {
                id: sid.clone(),
                path,
                history,
            }
        });
    }
    if let Some(sid) = &args.session_id {
        if !is_uuid(sid) {
            return Err("Error: Invalid session ID. Must be a valid UUID.".to_string());
        }
        if transcript::find(&s.config_dir, sid).is_some() {
            return Err(format!("Session ID {sid} is already in use."));
        }
        return Ok(Start::New { id: sid.clone() });
    }
    Ok(Start::New { id: uuid_v4() })
}
