//! Input files: expanding the names given, opening each (decompressing by
//! extension), and naming them in messages.
//!
//! `-` is standard input. A name containing `*`, `?` or `[` that is not an
//! existing file is a glob pattern, expanded in sorted order; a pattern that
//! matches nothing is an error (an import of nothing is more likely a typo
//! than intended). Files ending in `.gz` are gzip (several members allowed),
//! `.zst` or `.zstd` are zstd. Input files are only ever read.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One input: a file or standard input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A file (decompressed by extension).
    File(PathBuf),
}

impl Input {
    /// The name used in messages (`<stdin>` for standard input).
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".into(),
            Input::File(p) => p.display().to_string(),
        }
    }

    /// Bytes on disk (compressed size for compressed files), if known.
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::Stdin => None,
            Input::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
        }
    }

    /// A reader of the decompressed bytes.
    pub fn open(&self) -> Result<Box<dyn Read + Send>> {
        let p = match self {
            Input::Stdin => return Ok(Box::new(std::io::stdin())),
            Input::File(p) => p,
        };
        let mut file = File::open(p).map_err(|e| Error::io(p, e))?;
        let kind = compression(p);
        // A file named for a compression it does not hold would fail deep
        // in the decoder ("unexpected end of file"): check the magic bytes
        // (gzip 1f 8b, zstd 28 b5 2f fd) first and say what is wrong.
        let magic: &[u8] = match kind {
            Compression::Gzip => &[0x1f, 0x8b],
            Compression::Zstd => &[0x28, 0xb5, 0x2f, 0xfd],
            Compression::None => &[],
        };
        if !magic.is_empty() {
            use std::io::{Read as _, Seek as _};
            let mut head = [0u8; 4];
            let n = file.read(&mut head).map_err(|e| Error::io(p, e))?;
            let empty = n == 0;
            if !empty && !head[..n].starts_with(magic) {
                let what = if kind == Compression::Gzip {
                    "gzip"
                } else {
                    "zstd"
                };
                return Err(Error::invalid(format!(
                    "{}: not {what} data (its name ends in .{}, but it does not start \
                     with the {what} magic bytes)",
                    p.display(),
                    p.extension().and_then(|e| e.to_str()).unwrap_or_default()
                )));
            }
            file.rewind().map_err(|e| Error::io(p, e))?;
        }
        let f = |file| std::io::BufReader::with_capacity(1 << 20, file);
        match kind {
            Compression::Gzip => Ok(Box::new(flate2::read::MultiGzDecoder::new(f(file)))),
            Compression::Zstd => Ok(Box::new(
                zstd::stream::read::Decoder::with_buffer(f(file)).map_err(|e| Error::io(p, e))?,
            )),
            // The chunk splitter reads 64 KiB or more at a time, straight
            // into the chunk's buffer: a buffered reader in between copied
            // every byte once more (3% of a W1 import's instructions).
            Compression::None => Ok(Box::new(file)),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Compression {
    None,
    Gzip,
    Zstd,
}

fn compression(p: &Path) -> Compression {
    match p.extension().and_then(|e| e.to_str()) {
        Some("gz") => Compression::Gzip,
        Some("zst") | Some("zstd") => Compression::Zstd,
        _ => Compression::None,
    }
}

/// Expands the names given on the command line into inputs.
pub fn expand(names: &[String]) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for n in names {
        if n == "-" {
            if out.contains(&Input::Stdin) {
                return Err(Error::invalid("standard input (-) named twice"));
            }
            out.push(Input::Stdin);
            continue;
        }
        let is_pattern = n.contains(['*', '?', '[']) && !Path::new(n).exists();
        if !is_pattern {
            out.push(Input::File(PathBuf::from(n)));
            continue;
        }
        let paths = glob::glob(n).map_err(|e| Error::invalid(format!("pattern {n}: {e}")))?;
        let mut matched: Vec<PathBuf> = Vec::new();
        for p in paths {
            matched.push(p.map_err(|e| Error::invalid(format!("pattern {n}: {e}")))?);
        }
        matched.retain(|p| p.is_file());
        if matched.is_empty() {
            return Err(Error::invalid(format!("pattern {n} matches no file")));
        }
        matched.sort();
        out.extend(matched.into_iter().map(Input::File));
    }
    if out.is_empty() {
        return Err(Error::invalid("no input files"));
    }
    // A file loaded twice (named twice, or by a name and a pattern) would
    // have every row collide with itself, or in a table without a primary
    // key be stored twice.
    let mut seen = std::collections::HashSet::new();
    for i in &out {
        if let Input::File(p) = i {
            let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            if !seen.insert(key) {
                return Err(Error::invalid(format!(
                    "{} is named twice; to load a file twice, run two imports",
                    p.display()
                )));
            }
        }
    }
    Ok(out)
}
