//! macOS: the kernel's `proc_bsdinfo` of a process
//! (`proc_pidinfo(PROC_PIDTBSDINFO)`, `<libproc.h>`): its status, parent
//! and start time. The one call of it: liveness (`ccd-claude`) and
//! [`super::is_stopped`] read it here. Compiled for macOS only; not run
//! on a Mac in this project's tests.

/// `SSTOP` of `<sys/proc.h>`: "process debugging or suspension".
pub const SSTOP: u32 = 4;
/// `SZOMB` of `<sys/proc.h>`: a zombie (it has exited).
pub const SZOMB: u32 = super::BSD_SZOMB;

pub(super) fn is_stopped(pid: u32) -> bool {
    bsd_info(pid).is_ok_and(|info| info.pbi_status == SSTOP)
}

/// Why [`bsd_info`] has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BsdInfoError {
    /// The call failed with this errno (`ESRCH`: no such process).
    Failed(i32),
    /// The kernel wrote this many bytes, less than a whole `proc_bsdinfo`.
    Short(i32),
}

/// The kernel's `proc_bsdinfo` of `pid` (`proc_pidinfo(PROC_PIDTBSDINFO)`).
pub fn bsd_info(pid: u32) -> Result<libc::proc_bsdinfo, BsdInfoError> {
    let Ok(pid) = libc::c_int::try_from(pid) else {
        return Err(BsdInfoError::Failed(libc::ESRCH));
    };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    #[allow(unsafe_code)] // reason: proc_pidinfo has no wrapper in nix, rustix or std
    //
    // SAFETY: `info` is a writable buffer of `size` bytes; the kernel
    // writes at most that many and returns how many it wrote. It is read
    // only when filled whole (n == size), and zeroed before besides; every
    // field of `proc_bsdinfo` is a plain integer or byte array.
    let (n, info) = unsafe {
        let n = libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            info.as_mut_ptr().cast(),
            size,
        );
        (n, (n == size).then(|| info.assume_init()))
    };
    if n <= 0 {
        return Err(BsdInfoError::Failed(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    info.ok_or(BsdInfoError::Short(n))
}

/// How many descriptors `pid` has open (0: gone or unreadable):
/// `proc_pidinfo(PROC_PIDLISTFDS)`, asked once for the size of the table,
/// then for the table; each entry is one open descriptor.
pub fn fd_count(pid: u32) -> usize {
    let Ok(pid) = libc::c_int::try_from(pid) else {
        return 0;
    };
    let entry = std::mem::size_of::<libc::proc_fdinfo>();
    let mut buf: Vec<libc::proc_fdinfo> = Vec::new();
    #[allow(unsafe_code)] // reason: proc_pidinfo has no wrapper in nix, rustix, std or sysinfo
    //
    // SAFETY: the first call passes a null buffer of size 0, which asks
    // only for the size needed; the second passes `buf`'s capacity,
    // `size` bytes, of which the kernel writes at most that many (they
    // are never read: only their count is used).
    let got = unsafe {
        let need = libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, std::ptr::null_mut(), 0);
        let Ok(need) = usize::try_from(need) else {
            return 0;
        };
        buf.reserve_exact(need / entry + 1);
        let size = libc::c_int::try_from(buf.capacity() * entry).unwrap_or(0);
        libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, buf.as_mut_ptr().cast(), size)
    };
    usize::try_from(got).map_or(0, |n| n / entry)
}

/// The form [`start_of`] answers in.
pub const START_FORM: super::StartForm = super::StartForm::UnixSeconds;

/// What the kernel says of `pid`, as [`super::BsdInfo`].
fn info(pid: u32) -> super::BsdInfo {
    match bsd_info(pid) {
        Ok(info) => super::BsdInfo::Found {
            status: info.pbi_status,
            start_secs: info.pbi_start_tvsec,
            ppid: info.pbi_ppid,
        },
        Err(BsdInfoError::Failed(errno)) => super::BsdInfo::Failed(errno),
        Err(BsdInfoError::Short(n)) => super::BsdInfo::Short(n),
    }
}

/// The start of `pid` (`pbi_start_tvsec`); a zombie is gone.
pub fn start_of(pid: u32) -> super::StartState {
    info(pid).start_state()
}

/// The parent of a running process (`None`: gone, a zombie, or no parent).
pub fn parent_of(pid: u32) -> Option<u32> {
    info(pid).parent()
}

/// One pid space per machine.
pub fn pid_space() -> Option<super::PidSpace> {
    Some(super::PidSpace::Darwin)
}
