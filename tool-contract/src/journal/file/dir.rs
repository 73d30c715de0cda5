//! The request directory worked from its open handle: checked once when opened (a real directory of
//! this process's user, written by no one else, tightened to `0700` when others may read it), then
//! every file in it created, read, renamed and removed relative to that handle, so a directory
//! swapped for another by its path after the check is never the one used.

use std::fs::{self, File};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

/// A request file read whole.
pub(super) struct RequestFile {
    pub(super) bytes: Vec<u8>,
    /// The user that owns it (`uid 1000 (alice)`), where the system says.
    pub(super) owner: Option<String>,
    /// When it was last written, where the system says.
    pub(super) written: Option<std::time::SystemTime>,
}

/// The request directory, open.
pub(super) struct RequestDir {
    /// Its path, for the systems without directory handles (and the listing outside Linux).
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    path: PathBuf,
    /// The directory itself, opened without following a link.
    #[cfg(unix)]
    handle: File,
}

impl RequestDir {
    /// Open the directory at `path`, creating it (`0700`) if it does not exist, and check it: the
    /// error says why it may not be used (not a real directory, another user's, writable by others).
    /// One of this user's that others may read or enter (`0755`, made by an older build) is tightened
    /// to `0700` first.
    pub(super) fn open(path: &Path) -> Result<RequestDir, String> {
        make_dir(path).map_err(|e| format!("it cannot be created: {e}"))?;
        RequestDir::open_existing(path)
    }

    /// [`RequestDir::open`] of a directory that exists, never creating one (a holder looking for
    /// requests must not make again a directory its log's owner removed).
    pub(super) fn open_existing(path: &Path) -> Result<RequestDir, String> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
            let handle = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP | libc::ENOTDIR) => {
                        "it is not a directory (a symbolic link, or a file)".to_owned()
                    }
                    _ => format!("it cannot be read: {e}"),
                })?;
            // Everything below is asked of the handle: the directory opened, whatever the path
            // names by now.
            let meta = handle.metadata().map_err(|e| format!("it cannot be read: {e}"))?;
            if !meta.file_type().is_dir() {
                return Err("it is not a directory (a symbolic link, or a file)".into());
            }
            let me = own_uid();
            if meta.uid() != me {
                return Err(format!(
                    "it belongs to uid {}, not to this process's user (uid {me})",
                    meta.uid()
                ));
            }
            let mode = meta.mode() & 0o777;
            if mode & 0o022 != 0 {
                return Err(format!(
                    "its mode {mode:o} lets other users write to it; `chmod 700 {}`",
                    path.display()
                ));
            }
            if mode != 0o700 {
                handle.set_permissions(fs::Permissions::from_mode(0o700)).map_err(|e| {
                    format!("its mode {mode:o} lets others read it, and it cannot be made 700: {e}")
                })?;
            }
            Ok(RequestDir { path: path.to_path_buf(), handle })
        }
        #[cfg(not(unix))]
        {
            if !fs::symlink_metadata(path).map_err(|e| format!("it cannot be read: {e}"))?.is_dir() {
                return Err("it is not a directory (a symbolic link, or a file)".into());
            }
            Ok(RequestDir { path: path.to_path_buf() })
        }
    }

    /// Write `bytes` to `name` whole: to a temporary name made anew (never through a link, mode
    /// `0600`), then renamed. Whatever had the temporary name before (a link left there by someone)
    /// is removed, not written through.
    pub(super) fn write_whole(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let temporary = format!("{}.part", name.rsplit_once('.').map_or(name, |(stem, _)| stem));
        let _ = self.remove(&temporary);
        let mut file = self.open_at(&temporary, Open::CreateNew)?;
        file.write_all(bytes)?;
        drop(file);
        self.rename(&temporary, name)
    }

    /// The file `name` read whole, if it is a regular file of at most `most` bytes, opened without
    /// following a link and without blocking (a FIFO or a device is refused, never waited on).
    pub(super) fn read_regular(&self, name: &str, most: u64) -> io::Result<RequestFile> {
        let refuse = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        let file = self.open_at(name, Open::Read)?;
        let meta = file.metadata()?;
        if !meta.file_type().is_file() {
            return Err(refuse("not a regular file".into()));
        }
        let too_large = || refuse(format!("larger than the {most} bytes it may be"));
        if meta.len() > most {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        file.take(most + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > most {
            return Err(too_large());
        }
        #[cfg(unix)]
        let owner = Some(user_name(std::os::unix::fs::MetadataExt::uid(&meta)));
        #[cfg(not(unix))]
        let owner = None;
        Ok(RequestFile { bytes, owner, written: meta.modified().ok() })
    }

    /// The names of the directory's entries.
    pub(super) fn names(&self) -> io::Result<Vec<String>> {
        #[cfg(target_os = "linux")]
        let listed = fs::read_dir(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&self.handle)));
        // Elsewhere the listing goes by the path: a name listed from another directory is then only
        // looked for in this one, through the handle.
        #[cfg(not(target_os = "linux"))]
        let listed = fs::read_dir(&self.path);
        Ok(listed?.flatten().filter_map(|entry| entry.file_name().into_string().ok()).collect())
    }

    /// Rename `from` to `to`, both in this directory.
    pub(super) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let (from, to) = (c_name(from)?, c_name(to)?);
            let fd = self.handle.as_raw_fd();
            // SAFETY: both names are NUL-terminated strings that outlive the call; `fd` is the open
            // directory this struct owns.
            let done = unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) };
            if done == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
        }
        #[cfg(not(unix))]
        fs::rename(self.path.join(from), self.path.join(to))
    }

    /// Remove the file `name` (or, with `directory`, the empty directory `name`).
    pub(super) fn remove_entry(&self, name: &str, directory: bool) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let name = c_name(name)?;
            let flags = if directory { libc::AT_REMOVEDIR } else { 0 };
            // SAFETY: `name` is a NUL-terminated string that outlives the call; the descriptor is the
            // open directory this struct owns.
            let done = unsafe { libc::unlinkat(self.handle.as_raw_fd(), name.as_ptr(), flags) };
            if done == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
        }
        #[cfg(not(unix))]
        if directory { fs::remove_dir(self.path.join(name)) } else { fs::remove_file(self.path.join(name)) }
    }

    /// Remove the file `name`.
    pub(super) fn remove(&self, name: &str) -> io::Result<()> {
        self.remove_entry(name, false)
    }

    fn open_at(&self, name: &str, how: Open) -> io::Result<File> {
        #[cfg(unix)]
        {
            use std::os::fd::{AsRawFd, FromRawFd};
            let name = c_name(name)?;
            let flags = libc::O_NOFOLLOW
                | libc::O_CLOEXEC
                | match how {
                    Open::Read => libc::O_RDONLY | libc::O_NONBLOCK,
                    Open::CreateNew => libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                };
            // SAFETY: `name` is a NUL-terminated string that outlives the call; the descriptor is the
            // open directory this struct owns; the mode is read only with O_CREAT.
            let fd =
                unsafe { libc::openat(self.handle.as_raw_fd(), name.as_ptr(), flags, 0o600 as libc::c_uint) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` was just opened here and is owned by nothing else.
            Ok(unsafe { File::from_raw_fd(fd) })
        }
        #[cfg(not(unix))]
        match how {
            Open::Read => File::open(self.path.join(name)),
            Open::CreateNew => fs::OpenOptions::new().write(true).create_new(true).open(self.path.join(name)),
        }
    }
}

/// How a file of the directory is opened.
#[derive(Clone, Copy)]
enum Open {
    /// To read, without blocking.
    Read,
    /// Made anew, to write, mode `0600`.
    CreateNew,
}

/// `name` as a C string: one entry of the directory, never a path.
#[cfg(unix)]
fn c_name(name: &str) -> io::Result<std::ffi::CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a name in the directory"),
        ));
    }
    std::ffi::CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name holds NUL"))
}

/// Create the request directory `dir` if it does not exist: mode `0700` on Unix.
pub(super) fn make_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        done => done,
    }
}

/// This process's effective user id.
#[cfg(unix)]
fn own_uid() -> u32 {
    // SAFETY: geteuid takes nothing, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// `uid N (name)`, the name from `/etc/passwd` when it has one.
#[cfg(unix)]
fn user_name(uid: u32) -> String {
    let name = fs::read_to_string("/etc/passwd").ok().and_then(|passwd| {
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
        })
    });
    match name {
        Some(name) => format!("uid {uid} ({})", crate::rules::one_line(&name)),
        None => format!("uid {uid}"),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("tc-dir-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_directory_swapped_after_its_check_is_never_the_one_used() {
        let scratch = Scratch::new("swap");
        let path = scratch.0.join("attempts.log.settle");
        let dir = RequestDir::open(&path).unwrap();
        // Once checked, the path is pointed elsewhere: at a directory another user would control.
        let (moved, elsewhere) = (scratch.0.join("moved"), scratch.0.join("elsewhere"));
        fs::create_dir(&elsewhere).unwrap();
        fs::rename(&path, &moved).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        dir.write_whole("a.request", b"{}").unwrap();
        assert!(moved.join("a.request").is_file(), "written in the directory checked");
        assert!(!elsewhere.join("a.request").exists(), "nothing written through the swapped path");
        fs::write(elsewhere.join("planted.request"), b"{}").unwrap();
        assert_eq!(dir.names().unwrap(), ["a.request"], "only the checked directory is listed");
        assert!(dir.read_regular("planted.request", 64).is_err(), "nothing read from the swapped path");
        dir.rename("a.request", "a.taken").unwrap();
        assert!(moved.join("a.taken").is_file());
        dir.remove("a.taken").unwrap();
        assert!(fs::read_dir(&moved).unwrap().next().is_none());
        // The swapped path is refused when opened again: a link, not a directory.
        let why = RequestDir::open(&path).err().unwrap();
        assert!(why.contains("not a directory"), "{why}");
    }

    #[test]
    fn a_directory_others_may_read_is_tightened_and_one_they_may_write_refused() {
        let scratch = Scratch::new("modes");
        let path = scratch.0.join("attempts.log.settle");
        fs::create_dir(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        RequestDir::open(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700, "tightened");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o770)).unwrap();
        let why = RequestDir::open(&path).err().unwrap();
        assert!(why.contains("770") && why.contains("chmod 700"), "{why}");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o770, "left as it was");
        assert!(c_name("../x").is_err() && c_name("a/b").is_err() && c_name("..").is_err());
    }
}
