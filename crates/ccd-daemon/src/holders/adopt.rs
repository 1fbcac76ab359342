//! Adoption: at start the daemon rebuilds its holder table from the
//! sockets in `holders/` that answer (a holder outlives the daemon that
//! started it), and removes the sockets nobody answers on.

use super::rpc::{HolderConn, HolderError};
use super::spec::{self, HolderMeta};
use super::{HolderEntry, HolderTable};
use ccd_protocol::holder::{self as h, InfoResult};
use ccd_protocol::methods::Empty;
use std::path::Path;

/// What adoption asks a holder found in `holders/`, on one connection:
/// its holder protocol version (`holder.hello`), then `holder.info`.
async fn probe(socket: &Path) -> Result<(u32, InfoResult), HolderError> {
    let mut conn = HolderConn::connect(socket).await?;
    let protocol = conn.hello().await?;
    let info = conn.call::<h::Info>(&Empty {}).await?;
    Ok((protocol, info))
}

impl HolderTable {
    /// Adopts every holder whose socket answers; removes sockets nobody
    /// answers on (and their metadata). Returns how many were adopted.
    pub async fn adopt_all(&self) -> usize {
        if let Err(error) = self.verify_dir() {
            tracing::error!(%error, "not adopting holders from a directory that is not private");
            return 0;
        }
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut adopted = 0;
        for e in rd.filter_map(Result::ok) {
            let path = e.path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".sock"))
                .map(String::from)
            else {
                continue;
            };
            let asked = self.next_ask();
            let stored_meta = std::fs::read(self.meta_path(&id))
                .ok()
                .and_then(|b| serde_json::from_slice::<HolderMeta>(&b).ok());
            match probe(&path).await {
                Ok((protocol, info)) => {
                    let meta = stored_meta.unwrap_or_else(|| HolderMeta {
                        id: id.clone(),
                        session_id: info.session_id.clone(),
                        name: None,
                        cwd: info.cwd.clone(),
                        origin: spec::Origin::New,
                        forked_from: None,
                        created_at: info.started_at,
                        pinned: false,
                        holder_pid: Some(info.holder_pid),
                    });
                    tracing::info!(holder = %id, session = ?info.session_id, state = info.state.as_str(), protocol, "adopted holder");
                    let mut entry = HolderEntry::new(id.clone(), path, meta, Some(info), asked);
                    entry.protocol = Some(protocol);
                    if let Ok(mut m) = self.live.lock() {
                        m.insert(id, entry);
                    }
                    adopted += 1;
                }
                // Accepted (or a full accept backlog) but no answer in time,
                // or stopped: alive and slow (a flood, a loaded machine,
                // SIGSTOP), never removed. Adopted without its state, which
                // the next refresh that gets an answer fills in.
                Err(HolderError::Timeout | HolderError::Stopped { .. }) => match stored_meta {
                    Some(meta) => {
                        tracing::warn!(holder = %id, "holder is slow to answer; adopted, its state follows");
                        if let Ok(mut m) = self.live.lock() {
                            m.insert(id.clone(), HolderEntry::new(id, path, meta, None, 0));
                        }
                        adopted += 1;
                    }
                    None => {
                        tracing::warn!(holder = %id, "holder is slow to answer and has no metadata; left alone until the next start");
                    }
                },
                Err(error) => {
                    tracing::info!(holder = %id, %error, "removing the socket of a holder that does not answer");
                    let _ = std::fs::remove_file(&path);
                    self.remove_records(&id);
                }
            }
        }
        adopted
    }
}
