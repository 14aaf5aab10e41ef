//! The online check-and-insert engine (issue 5).
