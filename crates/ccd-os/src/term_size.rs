//! Terminal size: the columns and rows of the terminal a descriptor is
//! open on (`ioctl(TIOCGWINSZ)`, through rustix's `tcgetwinsize`). Linux
//! and macOS share the call (one side, no submodules); the CLI's terminal
//! client and the fake claude both ask here.

use std::os::fd::BorrowedFd;

/// The size (cols, rows) of the terminal `fd` is open on; `None` when it
/// is not a terminal (or says 0 columns or rows).
pub fn size_of(fd: BorrowedFd<'_>) -> Option<(u16, u16)> {
    let ws = rustix::termios::tcgetwinsize(fd).ok()?;
    (ws.ws_col > 0 && ws.ws_row > 0).then_some((ws.ws_col, ws.ws_row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_file_is_no_terminal() {
        let f = tempfile::tempfile().expect("a file");
        assert_eq!(size_of(f.as_fd()), None);
    }

    #[test]
    fn a_pty_says_the_size_it_was_given() {
        use nix::pty::{openpty, Winsize};
        let ws = Winsize {
            ws_row: 31,
            ws_col: 97,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = openpty(Some(&ws), None).expect("openpty");
        assert_eq!(size_of(pty.slave.as_fd()), Some((97, 31)));
    }
}
