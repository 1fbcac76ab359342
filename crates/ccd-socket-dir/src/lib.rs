//! ccd-socket-dir: the private directory that holds the daemon's socket,
//! its lock, and the holders' sockets.
//!
//! A crate (over `ccd-protocol` and `ccd-os`) shared by the daemon (which creates and checks the
//! directory) and the client (which checks it before it talks);
//! `ccd-client` re-exports it as `ccd_client::socket_dir`. It is not in
//! `ccd-protocol`, which stays pure (no file system, no `nix`): the
//! protocol keeps only the location rule (`transport::socket_dir`).
//!
//! Peer credentials ([`peer`], re-exported from `ccd_os::peer`, their
//! home): who is at the other end of a connection to one of these
//! sockets, as the kernel tells it.
//!
//! Resolution: an explicit path (`--socket-dir`), else `$CCD_SOCKET_DIR`,
//! else `$XDG_RUNTIME_DIR/ccd`, else `/tmp/ccd-<uid>`. The directory must be
//! a real directory (not a symlink: checked with `lstat`), owned by the
//! current user, with no permission bits for group or others. The daemon
//! creates it 0700 and refuses to start otherwise; clients refuse to talk
//! through a directory that fails the same check.
//!
//! Length: a Unix socket's path must fit `sockaddr_un.sun_path`
//! ([`SUN_PATH_BYTES`]: 108 bytes on Linux, 104 on macOS, the terminating
//! NUL included), and macOS's `$TMPDIR` (`/var/folders/…/T/`) is long. A
//! directory whose longest socket ([`LONGEST_SOCKET_NAME`], a holder's)
//! would not fit is refused by [`SocketDir::verify`] with
//! [`SocketDirError::PathTooLong`], which names the limit, before anything
//! is bound: not later, as a bind that fails when a session starts.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

pub use ccd_os::peer;

use ccd_protocol::transport;
use std::path::{Path, PathBuf};

/// The socket directory of one ccd instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketDir {
    path: PathBuf,
}

/// Why the socket directory (or the daemon's socket in it) cannot be used.
///
/// [`SocketDirError::NotPrivate`] is the refusal every caller matches: the
/// directory or socket is not private to this user. Its message (rendered
/// here, once) names what is wrong, what is expected and the command that
/// fixes it; ccd never repairs it itself (someone loosened it, and a socket
/// others could reach may have been replaced).
#[derive(Debug, thiserror::Error)]
pub enum SocketDirError {
    #[error("{}", refusal(.path, *.entry, .problem))]
    NotPrivate {
        path: PathBuf,
        entry: Entry,
        problem: Problem,
    },
    /// A socket in the directory would not fit `sun_path`
    /// ([`SUN_PATH_BYTES`]).
    #[error(
        "socket directory {} is too long for Unix sockets: {} would be {bytes} bytes, and a socket path may have at most {} bytes on this system (sun_path holds {limit} with its NUL). Fix: {}",
        .dir.display(), .socket.display(), .limit - 1, too_long_fix(.dir)
    )]
    PathTooLong {
        /// The directory.
        dir: PathBuf,
        /// Its longest socket's path.
        socket: PathBuf,
        /// That path's length in bytes.
        bytes: usize,
        /// `sun_path`'s size in bytes ([`SUN_PATH_BYTES`]).
        limit: usize,
    },
    #[error("cannot check {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// The socket directory: a directory of mode 0700, owned by the user.
    Directory,
    /// The daemon's socket in it: a socket of mode 0600, owned by the user.
    Socket,
    /// `holders/` in it, where the holders' sockets live: a directory of
    /// mode 0700, owned by the user.
    HoldersDirectory,
}

/// What is wrong with an [`Entry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    Symlink,
    /// Not a directory (resp. not a socket).
    WrongType,
    WrongOwner {
        owner: u32,
        ours: u32,
    },
    /// Permission bits for group or others (the whole mode, `0o7777` bits).
    Mode(u32),
}

impl Entry {
    fn name(self) -> &'static str {
        match self {
            Entry::Directory => "socket directory",
            Entry::Socket => "daemon socket",
            Entry::HoldersDirectory => "holders directory",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Entry::Directory | Entry::HoldersDirectory => {
                "a directory of mode 0700 owned by you, not a symlink"
            }
            Entry::Socket => "a socket of mode 0600 owned by you, not a symlink",
        }
    }
}

impl SocketDirError {
    /// The command (or step) that fixes a [`SocketDirError::NotPrivate`].
    pub fn fix(&self) -> Option<String> {
        match self {
            SocketDirError::NotPrivate {
                path,
                entry,
                problem,
            } => Some(fix(path, *entry, problem)),
            SocketDirError::PathTooLong { dir, .. } => Some(too_long_fix(dir)),
            SocketDirError::Io { .. } => None,
        }
    }

    /// True when the directory (or socket) does not exist: no daemon has
    /// made it yet, nothing is wrong.
    pub fn is_missing(&self) -> bool {
        matches!(self, SocketDirError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The one rendering of a refusal.
fn refusal(path: &Path, entry: Entry, problem: &Problem) -> String {
    let what = match (problem, entry) {
        (Problem::Mode(mode), _) => format!("has mode {mode:04o}"),
        (Problem::Symlink, _) => "is a symlink".to_string(),
        (Problem::WrongType, Entry::Directory | Entry::HoldersDirectory) => {
            "is not a directory".to_string()
        }
        (Problem::WrongType, Entry::Socket) => "is not a socket".to_string(),
        (Problem::WrongOwner { owner, ours }, _) => {
            format!("is owned by uid {owner}, not by you (uid {ours})")
        }
    };
    format!(
        "{} {} {what}; it must be private: {}. ccd refuses to use it and does not change it itself. Fix: {}",
        entry.name(),
        path.display(),
        entry.expected(),
        fix(path, entry, problem),
    )
}

fn fix(path: &Path, entry: Entry, problem: &Problem) -> String {
    let p = sh_quote(path);
    match (entry, problem) {
        (Entry::Directory | Entry::HoldersDirectory, Problem::Mode(_)) => format!("chmod 700 {p}"),
        (Entry::Socket, Problem::Mode(_)) => format!("chmod 600 {p}"),
        (Entry::Directory, Problem::Symlink | Problem::WrongType) => {
            format!("rm {p}  (ccd creates the directory again)")
        }
        (Entry::HoldersDirectory, Problem::Symlink | Problem::WrongType) => format!(
            "rm {p}, then end the daemon whose pid is in {} if it still runs; the next ccd command starts one that creates it again (holders whose sockets were there cannot be reached: end them by pid)",
            sh_quote(&path.parent().unwrap_or(path).join("daemon.lock"))
        ),
        (Entry::HoldersDirectory, Problem::WrongOwner { .. }) => format!(
            "use a socket directory of your own (--socket-dir or CCD_SOCKET_DIR); {p} is not yours"
        ),
        (Entry::Directory, Problem::WrongOwner { owner, .. }) => format!(
            "use a directory of your own (--socket-dir or CCD_SOCKET_DIR), or have uid {owner} remove {p}"
        ),
        (Entry::Socket, _) => {
            let lock = path.parent().map(|d| d.join("daemon.lock"));
            match lock {
                Some(lock) => format!(
                    "rm {p}, and end the daemon whose pid is in {} if it still runs (its sessions keep running)",
                    sh_quote(&lock)
                ),
                None => format!("rm {p}"),
            }
        }
    }
}

/// The step that fixes a [`SocketDirError::PathTooLong`].
fn too_long_fix(dir: &Path) -> String {
    format!(
        "use a shorter socket directory than {} (--socket-dir or CCD_SOCKET_DIR; the default without either is /tmp/ccd-<uid>)",
        sh_quote(dir)
    )
}

/// Bytes in `sockaddr_un.sun_path` on the system built for, the
/// terminating NUL included: 108 on Linux, 104 on macOS (read from libc's
/// struct, not assumed).
pub const SUN_PATH_BYTES: usize = std::mem::size_of::<nix::libc::sockaddr_un>()
    - std::mem::offset_of!(nix::libc::sockaddr_un, sun_path);

/// The longest name, relative to the directory, of a socket ccd binds in
/// it: a holder's, `holders/` + its id (`h` + 8 hex digits, made by the
/// daemon) + `.sock`. The daemon's own ([`SOCKET_NAME`]) is shorter.
pub const LONGEST_SOCKET_NAME: &str = "holders/h00000000.sock";

/// [`SocketDirError::PathTooLong`] unless `dir`'s longest socket
/// ([`LONGEST_SOCKET_NAME`]) fits a `sun_path` of `limit` bytes (the path
/// and its NUL).
fn check_length(dir: &Path, limit: usize) -> Result<(), SocketDirError> {
    let socket = dir.join(LONGEST_SOCKET_NAME);
    let bytes = socket.as_os_str().len();
    if bytes < limit {
        return Ok(());
    }
    Err(SocketDirError::PathTooLong {
        dir: dir.to_path_buf(),
        socket,
        bytes,
        limit,
    })
}

/// `path` as one shell word.
fn sh_quote(path: &Path) -> String {
    let s = path.display().to_string();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The socket file's name in the directory.
pub const SOCKET_NAME: &str = transport::SOCKET_FILE_NAME;

impl SocketDir {
    /// Uses `path` as is.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Resolves the directory from `explicit`, the environment and the uid.
    pub fn resolve(explicit: Option<&Path>) -> Self {
        let from_env = std::env::var_os(transport::SOCKET_DIR_ENV);
        let override_dir = explicit.map(|p| p.as_os_str()).or(from_env.as_deref());
        let xdg = std::env::var_os("XDG_RUNTIME_DIR");
        Self::new(transport::socket_dir(
            override_dir,
            xdg.as_deref(),
            nix::unistd::getuid().as_raw(),
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The daemon's socket.
    pub fn socket(&self) -> PathBuf {
        self.path.join(SOCKET_NAME)
    }

    /// The daemon's single-instance lock.
    pub fn daemon_lock(&self) -> PathBuf {
        self.path.join("daemon.lock")
    }

    /// Taken by a client while it starts a daemon.
    pub fn start_lock(&self) -> PathBuf {
        self.path.join("start.lock")
    }

    /// Where holders put their sockets.
    pub fn holders_dir(&self) -> PathBuf {
        self.path.join("holders")
    }

    /// Creates the directory (mode 0700) if missing, then [`Self::verify`]s
    /// it. Parents of an explicit directory are created with default modes.
    pub fn create_private(&self) -> Result<(), SocketDirError> {
        // Refused before anything is made (module doc, "Length").
        check_length(&self.path, SUN_PATH_BYTES)?;
        let io = |source| SocketDirError::Io {
            path: self.path.clone(),
            source,
        };
        match std::fs::symlink_metadata(&self.path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = self.path.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                let mut b = std::fs::DirBuilder::new();
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
                match b.create(&self.path) {
                    Ok(()) => {}
                    // Someone else created it meanwhile: verify theirs.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io(e)),
                }
            }
            Err(e) => return Err(io(e)),
        }
        self.verify()?;
        let holders = self.holders_dir();
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        match b.create(&holders) {
            Ok(()) => {}
            // Made before (or by a racing daemon): it must pass the check.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(SocketDirError::Io {
                    path: holders,
                    source: e,
                })
            }
        }
        self.verify_holders()
    }

    /// Checks `holders/` as [`Self::verify`] checks the directory (ours,
    /// 0700, not a symlink): done wherever the daemon creates a holder
    /// socket there, adopts one from there or connects to one for a
    /// client (a direct stream). A missing `holders/` is an
    /// [`SocketDirError::Io`] of kind `NotFound`.
    pub fn verify_holders(&self) -> Result<(), SocketDirError> {
        check(&self.holders_dir(), Entry::HoldersDirectory)
    }

    /// Checks that the directory's sockets fit `sun_path` (module doc,
    /// "Length"), then, without following symlinks, that the directory is
    /// ours and private.
    pub fn verify(&self) -> Result<(), SocketDirError> {
        check_length(&self.path, SUN_PATH_BYTES)?;
        check(&self.path, Entry::Directory)
    }

    /// What a client checks before it talks: the directory as [`Self::verify`]
    /// does, then the daemon's socket, if there is one, likewise (ours,
    /// a socket, no group/other bits). A missing directory or socket is an
    /// [`SocketDirError::Io`] of kind `NotFound` ([`SocketDirError::is_missing`]).
    pub fn verify_with_socket(&self) -> Result<(), SocketDirError> {
        self.verify()?;
        check(&self.socket(), Entry::Socket)
    }
}

/// The `lstat` checks of `path` as `entry`.
fn check(path: &Path, entry: Entry) -> Result<(), SocketDirError> {
    let refuse = |problem| {
        Err(SocketDirError::NotPrivate {
            path: path.to_path_buf(),
            entry,
            problem,
        })
    };
    let meta = std::fs::symlink_metadata(path).map_err(|source| SocketDirError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return refuse(Problem::Symlink);
    }
    let right_type = match entry {
        Entry::Directory | Entry::HoldersDirectory => file_type.is_dir(),
        Entry::Socket => {
            use std::os::unix::fs::FileTypeExt;
            file_type.is_socket()
        }
    };
    if !right_type {
        return refuse(Problem::WrongType);
    }
    use std::os::unix::fs::MetadataExt;
    let ours = nix::unistd::getuid().as_raw();
    if meta.uid() != ours {
        return refuse(Problem::WrongOwner {
            owner: meta.uid(),
            ours,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return refuse(Problem::Mode(mode));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn problem(r: Result<(), SocketDirError>) -> Option<(Entry, Problem)> {
        match r {
            Err(SocketDirError::NotPrivate { entry, problem, .. }) => Some((entry, problem)),
            _ => None,
        }
    }

    #[test]
    fn creates_private_and_refuses_bad_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let d = SocketDir::new(tmp.path().join("a/b/ccd"));
        d.create_private().unwrap();
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(d.holders_dir().is_dir());
        d.create_private().unwrap(); // idempotent

        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = d.verify().unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("has mode 0755"), "{msg}");
        assert!(msg.contains("0700"), "{msg}");
        assert!(
            msg.ends_with(&format!("Fix: chmod 700 {}", d.path().display())),
            "{msg}"
        );
        assert_eq!(
            e.fix().unwrap(),
            format!("chmod 700 {}", d.path().display())
        );
        assert_eq!(
            problem(Err(e)),
            Some((Entry::Directory, Problem::Mode(0o755)))
        );
        // Never repaired behind the user's back.
        assert!(d.create_private().is_err());
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);

        let link = SocketDir::new(tmp.path().join("link"));
        std::os::unix::fs::symlink(d.path(), link.path()).unwrap();
        assert_eq!(
            problem(link.create_private()),
            Some((Entry::Directory, Problem::Symlink))
        );

        let file = SocketDir::new(tmp.path().join("file"));
        std::fs::write(file.path(), b"").unwrap();
        assert_eq!(
            problem(file.verify()),
            Some((Entry::Directory, Problem::WrongType))
        );
    }

    #[test]
    fn checks_the_socket_too() {
        let tmp = tempfile::tempdir().unwrap();
        let d = SocketDir::new(tmp.path().join("ccd"));
        d.create_private().unwrap();
        // No socket: nothing wrong, nobody to talk to.
        assert!(d.verify_with_socket().unwrap_err().is_missing());

        let _listener = std::os::unix::net::UnixListener::bind(d.socket()).unwrap();
        std::fs::set_permissions(d.socket(), std::fs::Permissions::from_mode(0o600)).unwrap();
        d.verify_with_socket().unwrap();

        std::fs::set_permissions(d.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = d.verify_with_socket().unwrap_err();
        assert_eq!(
            e.fix().unwrap(),
            format!("chmod 600 {}", d.socket().display())
        );
        assert!(e.to_string().contains("has mode 0666"), "{e}");
        assert_eq!(problem(Err(e)), Some((Entry::Socket, Problem::Mode(0o666))));

        std::fs::remove_file(d.socket()).unwrap();
        std::fs::write(d.socket(), b"").unwrap();
        assert_eq!(
            problem(d.verify_with_socket()),
            Some((Entry::Socket, Problem::WrongType))
        );
    }

    #[test]
    fn sun_path_is_the_systems_size() {
        #[cfg(target_os = "linux")]
        assert_eq!(SUN_PATH_BYTES, 108);
        #[cfg(target_vendor = "apple")]
        assert_eq!(SUN_PATH_BYTES, 104);
    }

    /// A directory of `len` bytes (`/` and `d`s).
    fn dir_of(len: usize) -> PathBuf {
        PathBuf::from(format!("/{}", "d".repeat(len - 1)))
    }

    #[test]
    fn the_longest_socket_must_fit_each_systems_sun_path() {
        let name = LONGEST_SOCKET_NAME.len() + 1; // and the `/` before it
        for limit in [108, 104] {
            // The longest path that fits leaves one byte for the NUL.
            let fits = dir_of(limit - 1 - name);
            check_length(&fits, limit).unwrap();
            assert_eq!(fits.join(LONGEST_SOCKET_NAME).as_os_str().len(), limit - 1);
            let over = dir_of(limit - name);
            match check_length(&over, limit) {
                Err(SocketDirError::PathTooLong {
                    dir,
                    socket,
                    bytes,
                    limit: l,
                }) => {
                    assert_eq!((dir, bytes, l), (over.clone(), limit, limit));
                    assert_eq!(socket, over.join(LONGEST_SOCKET_NAME));
                }
                other => panic!("{other:?}"),
            }
        }
        // A directory that fits Linux's 108 bytes but not macOS's 104.
        let between = dir_of(108 - 1 - name);
        check_length(&between, 108).unwrap();
        assert!(check_length(&between, 104).is_err());
    }

    #[test]
    fn a_directory_too_long_for_sockets_is_refused_naming_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let room = SUN_PATH_BYTES - 1 - LONGEST_SOCKET_NAME.len() - 1;
        let base = tmp.path().as_os_str().len();
        let long = tmp.path().join("x".repeat(room + 1 - base - 1));
        assert_eq!(long.as_os_str().len(), room + 1);
        let d = SocketDir::new(&long);
        let e = d.create_private().unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("at most {} bytes", SUN_PATH_BYTES - 1)),
            "{msg}"
        );
        assert!(msg.contains(&long.display().to_string()), "{msg}");
        assert!(e.fix().unwrap().contains("CCD_SOCKET_DIR"));
        assert!(!long.exists(), "nothing is created for a directory refused");
        // One byte shorter fits, and a holder's socket binds there.
        let fits = SocketDir::new(tmp.path().join("x".repeat(room - base - 1)));
        fits.create_private().unwrap();
        let holder = fits.path().join(LONGEST_SOCKET_NAME);
        assert_eq!(holder.as_os_str().len(), SUN_PATH_BYTES - 1);
        std::os::unix::net::UnixListener::bind(&holder).unwrap();
    }

    #[test]
    fn fix_commands_quote_odd_paths() {
        assert_eq!(sh_quote(Path::new("/tmp/ccd-1000")), "/tmp/ccd-1000");
        assert_eq!(sh_quote(Path::new("/tmp/a b")), "'/tmp/a b'");
        assert_eq!(sh_quote(Path::new("/tmp/it's")), "'/tmp/it'\\''s'");
    }
}
