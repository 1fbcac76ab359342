//! Thread counters from `/proc/self/task`: how often a test's threads were
//! switched out (a wakeup a change removes shows as switches it no longer
//! makes). Linux only: the module is compiled there alone.

/// Context switches (voluntary and not) of this process's threads whose
/// name (`comm`: its first 15 characters) passes `keep`: thread id →
/// (name, switches). For tests alone in their binary
/// (another test's threads would count too).
pub fn thread_switches(
    keep: impl Fn(&str) -> bool,
) -> std::collections::HashMap<String, (String, u64)> {
    let mut out = std::collections::HashMap::new();
    for task in std::fs::read_dir("/proc/self/task").expect("tasks") {
        let dir = task.expect("task").path();
        let Ok(name) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        let name = name.trim().to_string();
        if !keep(&name) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(dir.join("status")) else {
            continue;
        };
        let switches = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        let tid = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.insert(tid, (name, switches));
    }
    out
}
