//! Engine failpoint tests (written next).
