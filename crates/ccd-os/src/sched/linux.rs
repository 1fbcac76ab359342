//! Linux: `sched_setattr` (the short slice, batch) on the calling thread,
//! and the autogroup's nice value through `/proc/self/autogroup`.

/// The slice asked for, in nanoseconds (the kernel's minimum is 0.1 ms).
const SHORT_SLICE_NS: u64 = 100_000;

/// The calling process's autogroup.
const AUTOGROUP: &str = "/proc/self/autogroup";

/// `struct sched_attr` (VER1, 56 bytes), as `sched_setattr(2)` takes it.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

pub(super) fn short_slice() {
    set_policy(libc::SCHED_OTHER, SHORT_SLICE_NS);
}

pub(super) fn bulk() {
    set_policy(libc::SCHED_BATCH, 0);
}

/// `policy` (normal or batch, both unprivileged) and slice `runtime` (0:
/// the default) for the calling thread, keeping its nice value.
#[allow(unsafe_code)] // reason: sched_setattr has no wrapper in nix, rustix or std, nor getpriority in nix
fn set_policy(policy: libc::c_int, runtime: u64) {
    // SAFETY: getpriority/sched_setattr on the calling thread (tid 0), with
    // a struct we own whose size field matches its layout; errno is the
    // calling thread's own (cleared so a -1 from getpriority is told apart).
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if nice == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: policy as u32,
            nice,
            runtime,
            ..SchedAttr::default()
        };
        let r = libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), policy, runtime, "scheduling hint refused");
        }
    }
}

pub(super) fn read_group_nice() -> std::io::Result<i32> {
    let text = std::fs::read_to_string(AUTOGROUP)?;
    super::parse_nice(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("no nice value in {AUTOGROUP}: {text:?}"),
        )
    })
}

pub(super) fn write_group_nice(nice: i32) -> std::io::Result<()> {
    std::fs::write(AUTOGROUP, nice.to_string())
}

#[cfg(test)]
mod tests {
    /// The calling thread's (policy, nice value), from
    /// `/proc/thread-self/stat` (fields 41 and 19; the command name, in
    /// parentheses, may hold spaces).
    fn policy_and_nice() -> (i32, i32) {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("stat");
        let rest = stat
            .rfind(')')
            .map(|i| &stat[i + 1..])
            .expect("a command name");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // `fields[0]` is field 3 (the state).
        let field = |n: usize| fields[n - 3].parse::<i32>().expect("a number");
        (field(41), field(19))
    }

    #[test]
    fn the_short_slice_keeps_the_policy_and_nice_value() {
        std::thread::spawn(|| {
            let before = policy_and_nice();
            super::short_slice();
            assert_eq!(before, policy_and_nice());
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn bulk_is_batch_where_allowed_and_keeps_the_nice_value() {
        std::thread::spawn(|| {
            let (_, nice) = policy_and_nice();
            super::bulk();
            // A kernel (or sandbox) that refuses batch scheduling leaves the
            // thread as it is: the hint is best effort.
            let (policy, after) = policy_and_nice();
            assert!(policy == libc::SCHED_BATCH || policy == libc::SCHED_OTHER);
            assert_eq!(after, nice);
            super::set_policy(libc::SCHED_OTHER, 0);
            assert_eq!(policy_and_nice(), (libc::SCHED_OTHER, nice));
        })
        .join()
        .expect("thread");
    }
}
