//! Fingerprint file reading, writing, detection and errors.
use neardup_index::fpfile::{self, Format};
use neardup_index::Error;

#[test]
fn roundtrip_raw_and_hex() {
    let dir = tempfile::tempdir().unwrap();
    let fps: Vec<u64> = neardup_index::random::corpus(3000, 1);
    for (name, fmt) in [
        ("a.bin", Format::Raw),
        ("a.hex", Format::Hex),
        ("noext", Format::Raw),
        ("b.txt", Format::Hex),
    ] {
        let p = dir.path().join(name);
        fpfile::write(&p, &fps, Format::Auto).unwrap();
        assert_eq!(fpfile::detect(&p).unwrap(), fmt, "{name}");
        assert_eq!(fpfile::read(&p).unwrap(), fps, "{name}");
    }
    // hex without a telling extension is detected by content
    let p = dir.path().join("plain");
    fpfile::write(&p, &fps, Format::Hex).unwrap();
    assert_eq!(fpfile::detect(&p).unwrap(), Format::Hex);
    assert_eq!(fpfile::read(&p).unwrap(), fps);
    let p = dir.path().join("empty");
    std::fs::write(&p, b"").unwrap();
    assert!(fpfile::read(&p).unwrap().is_empty());
}

#[test]
fn hex_variants_and_blank_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.txt");
    std::fs::write(&p, "0xFF\r\n\n  0X10  \nffffffffffffffff\n").unwrap();
    assert_eq!(fpfile::read(&p).unwrap(), vec![0xff, 0x10, u64::MAX]);
}

#[test]
fn bad_size_names_file_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.bin");
    std::fs::write(&p, [0u8; 13]).unwrap();
    let e = fpfile::read(&p).unwrap_err();
    assert!(matches!(e, Error::BadFileSize { size: 13, .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("bad.bin") && msg.contains("13") && msg.contains("multiple of 8"),
        "{msg}"
    );
}

#[test]
fn bad_hex_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.hex");
    std::fs::write(&p, "00ff\n\nzz12\n").unwrap();
    let e = fpfile::read(&p).unwrap_err();
    assert!(matches!(e, Error::BadHexLine { line: 3, .. }), "{e:?}");
    assert!(e.to_string().contains("bad.hex:3"), "{e}");
    for bad in ["+1", "0x", "12345678901234567", "0x-1", "1 2"] {
        std::fs::write(&p, format!("{bad}\n")).unwrap();
        assert!(fpfile::read(&p).is_err(), "{bad}");
    }
    let missing = dir.path().join("nope.bin");
    let e = fpfile::read(&missing).unwrap_err();
    assert!(matches!(e, Error::Io { .. }) && e.to_string().contains("nope.bin"));
    std::fs::write(&p, [0xffu8, 0xfe, b'\n']).unwrap();
    assert!(fpfile::read_with(&p, Format::Hex).is_err());
}
