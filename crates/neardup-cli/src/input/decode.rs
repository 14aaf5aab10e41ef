//! Opening one input stream: compression by magic bytes (gzip, zstd), a UTF-8 byte-order mark
//! dropped, and formats neardup cannot read refused with the file's name and the fix.

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

/// A buffered, decompressed input stream.
pub type Stream = Box<dyn BufRead + Send>;

const BUF: usize = 1 << 20;

/// How a stream is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (one or more members).
    Gzip,
    /// Zstandard (one or more frames).
    Zstd,
}

/// Opens `path` (standard input when `None`), decompressing gzip or zstd found by magic bytes.
/// A format neardup does not read is an `InvalidData` error saying what it is and the fix.
pub fn open(path: Option<&Path>) -> io::Result<(Stream, Compression)> {
    let inner: Box<dyn Read + Send> = match path {
        Some(p) => Box::new(std::fs::File::open(p)?),
        None => Box::new(io::stdin()),
    };
    decompress(inner)
}

/// Wraps `inner` in the decoder its first bytes call for, drops a UTF-8 byte-order mark.
pub fn decompress(mut inner: Box<dyn Read + Send>) -> io::Result<(Stream, Compression)> {
    let head = read_head(&mut inner, 8)?;
    let compression = sniff(&head)?;
    let raw = Cursor::new(head).chain(inner);
    let mut stream: Stream = match compression {
        Compression::None => Box::new(BufReader::with_capacity(BUF, raw)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF,
            flate2::bufread::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, raw)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            BUF,
            ZstdFrames::new(BufReader::with_capacity(1 << 16, raw)),
        )),
    };
    let head = read_head_buffered(&mut stream)?;
    if head.starts_with(b"\xEF\xBB\xBF") {
        stream.consume(3);
    }
    Ok((stream, compression))
}

/// Reads up to `n` bytes (fewer only at the end of the input).
fn read_head(r: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The first bytes of a buffered stream without consuming them (at least 3 unless the stream
/// is shorter, as far as one fill allows).
fn read_head_buffered(r: &mut Stream) -> io::Result<Vec<u8>> {
    Ok(r.fill_buf()?.iter().take(3).copied().collect())
}

/// The compression `head` announces, or an error for formats not read.
fn sniff(head: &[u8]) -> io::Result<Compression> {
    let refuse = |what: &str, fix: &str| {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("this is {what}, which neardup does not read; {fix}"),
        ))
    };
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Compression::Gzip)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Ok(Compression::Zstd)
    } else if head.starts_with(b"BZh") {
        refuse(
            "bzip2-compressed",
            "decompress it first (bunzip2 -k FILE) or recompress it with gzip or zstd",
        )
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        refuse(
            "xz-compressed",
            "decompress it first (xz -dk FILE) or recompress it with gzip or zstd",
        )
    } else if head.starts_with(b"PK\x03\x04") {
        refuse(
            "a zip archive",
            "unpack it (unzip FILE) and pass the directory",
        )
    } else if head.starts_with(b"PAR1") {
        refuse(
            "a Parquet file",
            "export it to JSONL first (one {\"id\",\"text\"} object a line)",
        )
    } else {
        Ok(Compression::None)
    }
}

/// A streaming zstd decoder over every frame of the input (`cat a.zst b.zst` holds two);
/// skippable frames are skipped.
struct ZstdFrames<R: BufRead> {
    src: R,
    dec: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(src: R) -> Self {
        ZstdFrames {
            src,
            dec: FrameDecoder::new(),
            in_frame: false,
        }
    }
}

fn zstd_error(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("zstd data is corrupt or truncated ({e})"),
    )
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                if self.dec.can_collect() > 0 {
                    return self.dec.read(buf);
                }
                if self.dec.is_finished() {
                    self.in_frame = false;
                    continue;
                }
                self.dec
                    .decode_blocks(&mut self.src, BlockDecodingStrategy::UptoBytes(1 << 20))
                    .map_err(zstd_error)?;
                continue;
            }
            if self.src.fill_buf()?.is_empty() {
                return Ok(0); // the input ends on a frame boundary
            }
            match self.dec.reset(&mut self.src) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    io::copy(
                        &mut (&mut self.src).take(u64::from(length)),
                        &mut io::sink(),
                    )?;
                }
                Err(e) => return Err(zstd_error(e)),
            }
        }
    }
}
