//! The allocator's heap: memory a large job freed, handed back to the
//! system. glibc keeps freed heap in its arenas (the blocking thread's
//! among them), so a long-lived daemon would otherwise keep a trim's peak:
//! on Linux with glibc, `malloc_trim(0)`. Elsewhere (macOS's allocator,
//! musl) there is no such call and nothing is done.

/// Hands freed heap back to the system where the allocator keeps it (see
/// the module doc).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::trim();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
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
        let again = vec![2u8; 1 << 20];
        assert_eq!(again.iter().map(|&b| b as usize).sum::<usize>(), 2 << 20);
    }
}
