//! How the process takes memory from the system.
//!
//! mimalloc asks Linux for transparent huge pages. A batch command (`dedup`, `fingerprint`,
//! `compare`, `eval`) allocates and frees buffers of every size batch after batch, and the
//! first touch of a huge page makes the kernel zero all 2 MiB of it, however little of it is
//! used: with them `neardup dedup` peaked 7–36 % higher on six sets, for the same CPU time
//! (`docs/performance.md`, "Transparent huge pages"). Batch commands therefore turn them off
//! for the process; the service and the Hamming index commands, whose large tables are probed
//! at random and gain from the TLB reach of huge pages, keep them.

/// Turns transparent huge pages off for this process (Linux; nothing elsewhere), unless the
/// user chose with `MIMALLOC_ALLOW_THP`.
pub(crate) fn batch_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes no pointer; it only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
