//! Advisory directory lock (`DIR/LOCK`, `flock(LOCK_EX | LOCK_NB)`).
//!
//! The kernel releases the lock when the process dies (even by SIGKILL), so a
//! crashed process never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::{Error, IoContext, Result};

/// Holds the lock until dropped.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    pub(crate) fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join("LOCK");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .at(&path)?;
        // SAFETY: flock on a valid, owned file descriptor has no memory-safety requirements.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(Error::Locked { path });
            }
            return Err(Error::io(path, err));
        }
        // Diagnostics only: which process holds the lock.
        file.set_len(0).at(&path)?;
        writeln!(file, "{}", std::process::id()).at(&path)?;
        Ok(DirLock { _file: file })
    }
}
