//! The allocator's heap: memory a large job freed, handed back to the
//! system. glibc keeps freed heap in its arenas (the blocking thread's
//! among them), so a long-lived daemon would otherwise keep a trim's peak:
//! on Linux with glibc, `malloc_trim(0)`. Elsewhere (macOS's allocator,
//! musl) there is no such call and nothing is done.
//!
//! And how many arenas glibc may make ([`limit_arenas`]): by default up
//! to 8 a core, one per thread that allocates while the others' are
//! busy; memory freed by another thread goes back to the arena it came
//! from, so a long-lived daemon whose blocking threads come and go keeps
//! free pieces pinned in many arenas between live ones, which a trim
//! cannot hand back.

/// Hands freed heap back to the system where the allocator keeps it (see
/// the module doc).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::trim();
}

/// At most `n` allocator arenas from now on (glibc's `M_ARENA_MAX`;
/// call before threads start). Elsewhere nothing is done.
pub fn limit_arenas(n: u32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::arena_max(n);
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = n;
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    /// `mallopt(M_ARENA_MAX, n)`.
    #[allow(unsafe_code)] // reason: mallopt (glibc's) has no wrapper in nix, rustix or std
    pub(super) fn arena_max(n: u32) {
        let n = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX).max(1);
        // SAFETY: mallopt takes two integers and only sets glibc's own
        // malloc parameters, under its lock.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, n);
        }
    }

    /// `malloc_trim(0)`.
    #[allow(unsafe_code)] // reason: malloc_trim (glibc's) has no wrapper in nix, rustix or std
    pub(super) fn trim() {
        // SAFETY: malloc_trim takes no pointer and only walks glibc's own
        // arenas, under their locks; 0 keeps no pad.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn freed_memory_is_released_without_harm() {
        let big: Vec<Vec<u8>> = (0..64).map(|_| vec![1u8; 64 * 1024]).collect();
        drop(big);
        super::release_freed();
        super::limit_arenas(2);
        let again = vec![2u8; 1 << 20];
        assert_eq!(again.iter().map(|&b| b as usize).sum::<usize>(), 2 << 20);
    }
}
