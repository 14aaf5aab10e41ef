//! Work off the GIL, on a rayon pool of the size asked for (`threads=0`: one thread per core).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;

/// The pool of `threads` workers (built once per size; 0: rayon's global pool).
fn pool(threads: usize) -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    if threads == 0 {
        return Ok(None);
    }
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&threads) {
        return Ok(Some(p.clone()));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("neardup-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| crate::errors::config(format!("threads = {threads}: {e}")))?;
    pools.insert(threads, p.clone());
    Ok(Some(p))
}

/// Runs `f` with the GIL released, on the pool of `threads` workers.
pub fn run<R: Send>(py: Python<'_>, threads: usize, f: impl FnOnce() -> R + Send) -> PyResult<R> {
    let pool = pool(threads)?;
    Ok(py.allow_threads(|| match pool {
        Some(p) => p.install(f),
        None => f(),
    }))
}
