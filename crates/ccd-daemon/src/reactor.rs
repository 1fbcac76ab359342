//! Descriptors the runtime's reactor watches for readiness (tokio's
//! `AsyncFd`): a process's pidfd or kqueue (`exit_watch`), the registry
//! folder's inotify (`events::dir_watch`), a client's socket waited on for
//! its hang-up (`conn_ctx`). A leaf: those modules import it, it imports
//! nothing of the crate.
//!
//! Registering a descriptor with tokio is unsafe: it must stay open, and
//! be the same descriptor, for as long as the `AsyncFd` lives. [`Watched`]
//! is the one registration: it owns the descriptor (an [`OwnedFd`], or a
//! nix `Inotify`, whose descriptor never changes) and lends it out only
//! by shared reference, so nothing can close or swap it while it is
//! watched; dropping it deregisters the descriptor, then closes it.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};
use tokio::io::Interest;

/// What [`Watched`] may hold: a type that owns one descriptor and names
/// that same descriptor for its whole life (sealed: the types below).
pub trait Stable: AsFd + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for std::os::fd::OwnedFd {}
    #[cfg(target_os = "linux")]
    impl Sealed for nix::sys::inotify::Inotify {}
}

impl Stable for OwnedFd {}
#[cfg(target_os = "linux")]
impl Stable for nix::sys::inotify::Inotify {}

/// A [`Stable`] value as tokio takes it (`AsRawFd`). Made only here.
#[derive(Debug)]
pub struct Held<T>(T);

impl<T: Stable> AsRawFd for Held<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A descriptor registered with the runtime's reactor (see the module
/// doc). Must be made inside a runtime.
#[derive(Debug)]
pub struct Watched<T: Stable>(AsyncFd<Held<T>>);

impl<T: Stable> Watched<T> {
    /// Registers `inner`'s descriptor for `interest`. Err: the reactor
    /// refused it (the descriptor is closed).
    #[allow(unsafe_code)] // reason: tokio's registration of a descriptor is unsafe (its I/O-safety contract)
    pub fn new(inner: T, interest: Interest) -> io::Result<Self> {
        // SAFETY: the AsyncFd owns `inner`, whose descriptor is the same
        // for its whole life (`Stable`) and stays open until the AsyncFd
        // drops it; `Watched` never hands out `&mut` to it (no `get_mut`,
        // no mutable guard), so it cannot be closed or swapped meanwhile.
        let fd = unsafe { AsyncFd::register_with_interest(Held(inner), interest) }?;
        Ok(Self(fd))
    }

    /// The value watched.
    pub fn get_ref(&self) -> &T {
        &self.0.get_ref().0
    }

    /// Waits until the descriptor is readable (see tokio's `AsyncFd`).
    pub async fn readable(&self) -> io::Result<AsyncFdReadyGuard<'_, Held<T>>> {
        self.0.readable().await
    }

    /// Waits until the descriptor is writable (or write-closed).
    pub async fn writable(&self) -> io::Result<AsyncFdReadyGuard<'_, Held<T>>> {
        self.0.writable().await
    }
}
