//! macOS: a new kqueue holding one `EVFILT_PROC` event for `NOTE_EXIT` on
//! the process (through nix).

use std::os::fd::OwnedFd;

pub(super) fn open(pid: libc::pid_t) -> std::io::Result<OwnedFd> {
    use nix::sys::event::{EvFlags, EventFilter, FilterFlag, KEvent, Kqueue};
    let kq = Kqueue::new()?;
    let event = KEvent::new(
        pid as usize,
        EventFilter::EVFILT_PROC,
        EvFlags::EV_ADD,
        FilterFlag::NOTE_EXIT,
        0,
        0,
    );
    // Registration only (no room for events): an error comes back as the
    // call's own (`ESRCH` for a pid that names no live process).
    kq.kevent(&[event], &mut [], None)?;
    Ok(kq.into())
}
