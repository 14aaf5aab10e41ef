//! Exact content digest of normalised text (issue 6).
