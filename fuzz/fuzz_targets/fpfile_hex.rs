//! Arbitrary bytes as a fingerprint file (raw / hex detection and parsing): a clear error or
//! fingerprints, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        for line in s.lines() {
            let _ = neardup_index::fpfile::parse_hex(line);
        }
    }
    let path = std::env::temp_dir().join(format!("neardup-fuzz-{}.fps", std::process::id()));
    std::fs::write(&path, data).unwrap();
    let _ = neardup_index::fpfile::read(&path);
    let _ = std::fs::remove_file(&path);
});
