//! The terminal we run in: raw mode (as Node/libuv sets it, keeping output processing), its
//! size, and unbuffered writes to it.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use nix::sys::termios::{
    self, ControlFlags, InputFlags, LocalFlags, SetArg, SpecialCharacterIndices, Termios,
};

/// Puts stdin in raw mode; `restore` puts the saved settings back.
pub struct RawMode {
    saved: Option<Termios>,
}

impl RawMode {
    /// Like libuv's `UV_TTY_MODE_RAW`: no echo, no canonical mode, no signals from keys
    /// (Ctrl-C arrives as byte 0x03), output processing (`\n` -> `\r\n`) kept.
    pub fn enable() -> RawMode {
        let stdin = io::stdin();
        let Ok(saved) = termios::tcgetattr(stdin.as_fd()) else {
            return RawMode { saved: None };
        };
        let mut raw = saved.clone();
        raw.input_flags &= !(InputFlags::BRKINT
            | InputFlags::ICRNL
            | InputFlags::INPCK
            | InputFlags::ISTRIP
            | InputFlags::IXON);
        raw.control_flags |= ControlFlags::CS8;
        raw.local_flags &=
            !(LocalFlags::ECHO | LocalFlags::ICANON | LocalFlags::IEXTEN | LocalFlags::ISIG);
        raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        if termios::tcsetattr(stdin.as_fd(), SetArg::TCSADRAIN, &raw).is_err() {
            return RawMode { saved: None };
        }
        RawMode { saved: Some(saved) }
    }

    pub fn restore(&self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(io::stdin().as_fd(), SetArg::TCSADRAIN, saved);
        }
    }
}

/// (rows, cols) of the terminal on stdout, else stdin, else 24x80.
pub fn size() -> (u16, u16) {
    winsize(io::stdout().as_fd())
        .or_else(|| winsize(io::stdin().as_fd()))
        .unwrap_or((24, 80))
}

/// (rows, cols) of the terminal `fd` is open on; None when it is not a
/// terminal (or says 0 rows or columns): `ccd_os::term_size`.
fn winsize(fd: BorrowedFd<'_>) -> Option<(u16, u16)> {
    ccd_os::term_size::size_of(fd).map(|(cols, rows)| (rows, cols))
}

/// Writes all of `bytes` to stdout without buffering. An error means the terminal is gone.
pub fn write_out(bytes: &[u8]) -> io::Result<()> {
    let stdout = io::stdout();
    let mut rest = bytes;
    while !rest.is_empty() {
        match nix::unistd::write(stdout.as_fd(), rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
