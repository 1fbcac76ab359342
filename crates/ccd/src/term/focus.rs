//! Telling the daemon whether this terminal has the focus of the session
//! it is attached to (`session.focus`, issue 53: the notification rules
//! hold a notification back while a person looks at the session). Each
//! change is said once, as a notification, on a daemon connection that
//! lives as long as the attachment (its end tells the daemon this client
//! is no longer focused; the connection a direct stream came through is
//! kept open for it).
//!
//! Where the changes come from: handing the terminal to a holder that
//! reads focus reports ([`h::FOCUS_VERSION`]), the client turns them on
//! ([`REPORTS_ON`]; `raw::RESET_MODES` turns them off on every way out)
//! and the holder tells it of each change (`holder.focus`,
//! [`from_holder`]), taking the reports out of the keys unless the
//! program asked for them itself. Relaying the keys itself, the client
//! does not know the program's modes (they are the holder's screen
//! model's), so it asks the terminal for nothing and takes nothing out:
//! it only watches the reports the program's own `?1004h` brings
//! ([`KeyWatch`]), which reach the program as keys as before.

use super::run::send;
use ccd_client::client::{Reader, Writer};
use ccd_client::Client;
use ccd_holder::focus::FocusFilter;
use ccd_protocol::holder as h;
use ccd_protocol::methods::attach::{FocusParams, SessionFocus};
use ccd_protocol::Notification;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Turns a terminal's focus reports on (`ESC [ I` / `ESC [ O`).
pub(super) const REPORTS_ON: &[u8] = b"\x1b[?1004h";

/// Tells the daemon whether this terminal has the focus of the session
/// (`session.focus`, as a notification), each change once.
pub(super) struct FocusTeller {
    writer: Arc<Mutex<Writer>>,
    session: String,
    /// What was said last.
    said: Mutex<Option<bool>>,
    /// The reading half of a daemon connection of its own, kept open with
    /// it (nothing is read: the daemon answers no notification).
    _reader: Option<Reader>,
}

impl FocusTeller {
    /// On the daemon connection a direct stream came through, kept open.
    pub(super) fn own(client: Client, session: &str) -> Self {
        let (reader, writer, _) = client.split();
        Self {
            writer: Arc::new(Mutex::new(writer)),
            session: session.to_string(),
            said: Mutex::new(None),
            _reader: Some(reader),
        }
    }

    /// On the daemon connection that carries the stream.
    pub(super) fn on(writer: Arc<Mutex<Writer>>, session: &str) -> Self {
        Self {
            writer,
            session: session.to_string(),
            said: Mutex::new(None),
            _reader: None,
        }
    }

    /// The terminal has the focus (`true`) or lost it.
    pub(super) fn say(&self, focused: bool) {
        let Ok(mut said) = self.said.lock() else {
            return;
        };
        if *said == Some(focused) {
            return;
        }
        tracing::debug!(focused, "terminal focus");
        let params = FocusParams {
            session: self.session.clone(),
            focused,
        };
        // A daemon gone meanwhile hears nothing more: its successor starts
        // with nobody focused.
        if send::<SessionFocus>(&self.writer, &params) {
            *said = Some(focused);
        }
    }
}

/// The teller of an attachment: for an interactive one, on `daemon` (the
/// connection a direct stream came through, kept open) or else on the
/// daemon connection that carries the stream (`stream`); none for an
/// observer.
pub(super) fn teller(
    interactive: bool,
    daemon: Option<Client>,
    stream: &Arc<Mutex<Writer>>,
    session: &str,
) -> Option<Arc<FocusTeller>> {
    interactive.then(|| {
        Arc::new(match daemon {
            Some(c) => FocusTeller::own(c, session),
            None => FocusTeller::on(stream.clone(), session),
        })
    })
}

/// Whether a terminal handed to a holder speaking `holder_protocol` is
/// asked for focus reports (the holder reads them for the client): for an
/// attachment with a teller, from [`h::FOCUS_VERSION`] on (an older
/// holder would pass them to the program as keys).
pub(super) fn reports_wanted(
    teller: &Option<Arc<FocusTeller>>,
    holder_protocol: Option<u32>,
) -> bool {
    teller.is_some() && holder_protocol.is_some_and(|v| v >= h::FOCUS_VERSION)
}

/// Watches the keys this client relays for the reports the program's own
/// `?1004h` brings, and tells each change; the keys go on untouched (the
/// reports are the program's), so nothing is kept back.
pub(super) struct KeyWatch {
    filter: FocusFilter,
    teller: Option<Arc<FocusTeller>>,
}

impl KeyWatch {
    pub(super) fn new(teller: Option<Arc<FocusTeller>>) -> Self {
        Self {
            filter: FocusFilter::new(),
            teller,
        }
    }

    /// Keys read from the terminal.
    pub(super) fn read(&mut self, keys: &[u8]) {
        if let Some(t) = &self.teller {
            if let Some(focused) = self.filter.feed(keys, Instant::now(), true).focused {
                t.say(focused);
            }
        }
    }
}

/// A `holder.focus` notification: told on by `teller`. Never ends the
/// attachment (`None`).
pub(super) fn from_holder<T>(teller: Option<&FocusTeller>, n: &Notification) -> Option<T> {
    if let (Some(t), Ok(p)) = (teller, n.params_as::<h::FocusParams>()) {
        t.say(p.focused);
    }
    None
}
