//! Raw mode on the controlling terminal, restored on every way out.

use nix::sys::termios::{self, SetArg, Termios};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Mutex;

/// Undoes every mode an attached session may have set: mouse reporting,
/// bracketed paste, focus events, synchronized output, kitty keyboard
/// flags, modifyOtherKeys, application cursor/keypad, hidden cursor,
/// alternate screen, colours and attributes.
pub const RESET_MODES: &[u8] = b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\
\x1b[?2004l\x1b[?1004l\x1b[?2026l\x1b[?2031l\x1b[=0;1u\x1b[>4;0m\x1b[?1l\x1b>\x1b[?25h\x1b[?1049l\x1b[0m\x1b[r";

/// The termios saved when raw mode was entered, for restores from a
/// signal thread or the panic hook.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Raw mode while alive.
pub struct RawMode {
    _private: (),
}

impl RawMode {
    /// Puts the terminal on stdin in raw mode and installs a panic hook
    /// that restores it.
    pub fn enter() -> std::io::Result<Self> {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd();
        let original = termios::tcgetattr(fd).map_err(std::io::Error::from)?;
        let mut raw = original.clone();
        termios::cfmakeraw(&mut raw);
        if let Ok(mut s) = SAVED.lock() {
            *s = Some(original);
        }
        termios::tcsetattr(fd, SetArg::TCSANOW, &raw).map_err(std::io::Error::from)?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        Ok(Self { _private: () })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// Restores the saved termios and resets the modes (idempotent).
pub fn restore() {
    let saved = SAVED.lock().ok().and_then(|mut s| s.take());
    if let Some(t) = saved {
        let mut out = std::io::stdout();
        let _ = out.write_all(RESET_MODES);
        let _ = out.flush();
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &t);
    }
}

/// The terminal's size (cols, rows): that of the first of stdin, stdout
/// and stderr that is a terminal.
pub fn size() -> Option<(u16, u16)> {
    size_of(std::io::stdin().as_fd())
        .or_else(|| size_of(std::io::stdout().as_fd()))
        .or_else(|| size_of(std::io::stderr().as_fd()))
}

/// The size (cols, rows) of the terminal `fd` is open on; None when it is
/// not a terminal (or says 0 columns or rows): `ccd_os::term_size`.
pub fn size_of(fd: BorrowedFd<'_>) -> Option<(u16, u16)> {
    ccd_os::term_size::size_of(fd)
}
