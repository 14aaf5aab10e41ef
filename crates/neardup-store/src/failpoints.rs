//! Named failpoints for crash testing (cargo feature `failpoints`).
//!
//! The store calls `hit(name)` at interesting moments; tests arm a point with
//! [`set`] and the store then fails there with an I/O error, as if the process
//! had died at that instant (the store marks itself failed and stops
//! writing, so nothing after the point reaches the disk). Points:
//!
//! | name | where |
//! |---|---|
//! | `log-before-write` | the flushing thread, before writing a batch of frames |
//! | `torn-write` | the flushing thread writes only the first half (+1 byte) of a batch, then fails |
//! | `after-write-before-sync` | batch written to the OS, fdatasync not yet issued |
//! | `rotate-before-rename` | new segment's temp file written and synced, not renamed |
//! | `rotate-after-rename-before-dir-sync` | new segment renamed, directory not yet synced |
//! | `snapshot-before-sync` | snapshot temp file fully written, not yet fsynced |
//! | `before-rename` | snapshot temp file synced, not yet renamed |
//! | `after-rename-before-dir-sync` | snapshot renamed, directory not yet synced |
//! | `snapshot-before-cleanup` | snapshot published, old files not yet deleted |
//! | `snapshot-mid-cleanup` | after deleting the first obsolete file |
//!
//! The registry is process-global: tests using it must not run concurrently
//! with each other (serialise them with a mutex).

use std::collections::HashMap;
use std::io;
use std::sync::Mutex;

/// What an armed failpoint does when reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Fail every time the point is reached.
    Error,
    /// Let the first `n` hits pass, then fail every time.
    ErrorAfter(u32),
}

static REGISTRY: Mutex<Option<HashMap<String, (Action, u32)>>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut HashMap<String, (Action, u32)>) -> R) -> R {
    let mut g = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// Arms failpoint `name` with `action` (replacing any previous setting).
pub fn set(name: &str, action: Action) {
    with(|m| m.insert(name.to_string(), (action, 0)));
}

/// Disarms failpoint `name`.
pub fn remove(name: &str) {
    with(|m| m.remove(name));
}

/// Disarms all failpoints.
pub fn clear() {
    with(|m| m.clear());
}

/// Called by the store at point `name`; fails if the point is armed.
pub(crate) fn hit(name: &str) -> io::Result<()> {
    let fire = with(|m| match m.get_mut(name) {
        None => false,
        Some((Action::Error, _)) => true,
        Some((Action::ErrorAfter(n), seen)) => {
            *seen += 1;
            *seen > *n
        }
    });
    if fire {
        Err(io::Error::other(format!("failpoint {name} fired")))
    } else {
        Ok(())
    }
}
