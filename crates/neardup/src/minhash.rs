//! MinHash signatures and LSH banding (issue 6).
