//! # neardup-clock
//!
//! Where does "now" come from? The [`Clock`] trait, the [`SystemClock`] and a [`ManualClock`]
//! that moves only when told to — one definition for the embedded engine and the Redis backend,
//! so one clock can drive both (as the tests do).
//!
//! Invariant: a clock answers milliseconds since the Unix epoch. Its users keep their own
//! high-water mark, so that their "now" never goes backwards.
//!
//! ```
//! use neardup_clock::{Clock, ManualClock};
//! use std::time::Duration;
//! let c = ManualClock::new(1_000);
//! c.advance(Duration::from_secs(2));
//! assert_eq!(c.now_ms(), 3_000);
//! ```
#![warn(missing_docs)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Source of "now" in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    ms: AtomicI64,
}

impl ManualClock {
    /// A clock showing `ms` milliseconds since the epoch.
    pub fn new(ms: i64) -> ManualClock {
        ManualClock {
            ms: AtomicI64::new(ms),
        }
    }

    /// Sets the time.
    pub fn set(&self, ms: i64) {
        self.ms.store(ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.ms.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }
}
