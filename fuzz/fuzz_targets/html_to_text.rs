//! Arbitrary text as HTML, with and without main-content extraction: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = neardup::normalize::html_to_text_with(s, true);
        let _ = neardup::normalize::html_to_text_with(s, false);
        let _ = neardup::normalize::looks_like_html(s);
    }
});
