//! macOS: the boot time (`sysctl kern.boottime`), as `<secs>.<usecs>`.

/// `kern.boottime`, a `timeval` fixed for the boot.
pub fn boot_id() -> std::io::Result<super::BootId> {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut size = std::mem::size_of::<libc::timeval>();
    let name = c"kern.boottime";
    #[allow(unsafe_code)] // reason: sysctlbyname has no wrapper in nix, rustix or std
    //
    // SAFETY: `name` is a NUL-terminated string; `tv` is a writable
    // `timeval` of `size` bytes, which the kernel fills (and `size` says
    // how much it wrote); no new value is set (null, 0).
    let r = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            (&mut tv as *mut libc::timeval).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if size != std::mem::size_of::<libc::timeval>() || tv.tv_sec == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "kern.boottime: no boot time",
        ));
    }
    super::parse_id(&format!("{}.{:06}", tv.tv_sec, tv.tv_usec))
}
