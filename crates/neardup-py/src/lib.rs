//! `neardup._neardup`: the Python face of neardup (PyO3). Thin: every decision is the
//! library's — the detector factory ([`neardup::detect::spec`]), batch dedup and its online
//! rule ([`neardup::dedup`]), the engine — and every call that works releases the GIL.

mod arrays;
mod components;
mod decision;
mod dedup;
mod deduper;
mod engine;
mod errors;
mod fingerprinter;
mod index;
mod lean;
mod minhash;
mod options;
mod spec;
mod stream;
mod texts;
mod threads;

use pyo3::prelude::*;

/// The compiled half of the `neardup` package (import `neardup`, not this).
#[pymodule]
fn _neardup(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<fingerprinter::Fingerprinter>()?;
    m.add_class::<minhash::MinHash>()?;
    m.add_class::<decision::Decision>()?;
    m.add_class::<deduper::Deduper>()?;
    m.add_class::<deduper::Match>()?;
    m.add_class::<index::HammingIndex>()?;
    m.add_class::<lean::LeanIndex>()?;
    m.add_class::<engine::Engine>()?;
    m.add_function(wrap_pyfunction!(fingerprinter::hamming, m)?)?;
    m.add_function(wrap_pyfunction!(dedup::dedup_texts, m)?)?;
    m.add_function(wrap_pyfunction!(components::components, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
