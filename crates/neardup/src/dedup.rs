//! Batch deduplication of a corpus into clusters (issue 4).
