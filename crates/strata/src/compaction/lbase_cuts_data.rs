//! Data-driven tests of where Lbase is cut and how large an L0 -> Lbase
//! pick may grow (`lbase_cuts::split_bytes_of`, `lbase_cuts::cut_keys`,
//! `picker::l0_base_max_bytes`) for a given tree and options: every
//! `testdata/lbase_cuts/*.txt` is a script of commands with their expected
//! output. Run with `STRATA_REWRITE=1` to write the actual output back into
//! the files (then read the diff before committing it).
//!
//! The file format is `util::datadriven`'s. One command:
//!
//! - `define [base-level-bytes=N] [target-file-size=N] [slices=N]
//!   [split-bytes=N]`: the options (defaults otherwise: `slices` is
//!   `lbase_slices`, `split-bytes` is `lbase_split_bytes`) and the version,
//!   one level per input line, `L<n>: lo-hi size=N ...` (sizes in bytes,
//!   with `K`/`M`/`G` suffixes for KiB, MiB, GiB), or `L<n> xN: prefix
//!   size=N` for N single-key files (`define_version`, which the picker's
//!   tests share). Prints Lbase, the data's
//!   and Lbase's bytes, the slice size, the bound on an L0 -> Lbase pick,
//!   and the cut keys. A file asked for `n` inner points (cut into `n + 1`
//!   parts) gives the keys `lo/001` ... `lo/n` (three digits), which sort inside it.

#![allow(clippy::unwrap_used)] // tests may unwrap

use super::lbase_cuts::{cut_keys, split_bytes_of};
use super::picker::{l0_base_max_bytes, level_targets, CompactionOptions};
use crate::key::{make_internal_key, ValueKind};
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};
use std::path::Path;

pub(super) fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mul) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|_| format!("bad size {s:?}"))
}

fn fmt_size(n: u64) -> String {
    match n {
        0 => "0".into(),
        n if n % (1 << 30) == 0 => format!("{}G", n >> 30),
        n if n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

pub(super) fn file(number: u64, range: &str, size: u64) -> Result<FileMeta, String> {
    let (lo, hi) = range
        .split_once('-')
        .ok_or_else(|| format!("bad range {range:?}"))?;
    Ok(FileMeta {
        number,
        size,
        smallest: make_internal_key(lo.as_bytes(), number, ValueKind::Value),
        largest: make_internal_key(hi.as_bytes(), number, ValueKind::Value),
        smallest_seq: number,
        largest_seq: number,
        global_seqno: None,
        num_entries: 1,
        num_deletions: 0,
        num_range_deletions: 0,
        backing: None,
    })
}

/// The version of a `define` command's input, one level per line:
/// `L<n>: lo-hi size=N ...`, or `L<n> xN: prefix size=N` for N single-key
/// files `prefix000` ... (three digits). Files are numbered in input
/// order from 1, and a file's sequence numbers are its number. Returns
/// the version and the last number used.
pub(super) fn define_version(input: &[&str]) -> Result<(Version, u64), String> {
    let mut edit = VersionEdit::default();
    let mut number = 0;
    for line in input {
        let (head, files) = line.split_once(':').ok_or("want `L<n>: files`")?;
        let mut head = head.split_whitespace();
        let level: usize = head
            .next()
            .and_then(|l| l.strip_prefix('L'))
            .and_then(|n| n.parse().ok())
            .filter(|&l| l < NUM_LEVELS)
            .ok_or_else(|| format!("bad level in {line:?}"))?;
        let words: Vec<&str> = files.split_whitespace().collect();
        if let Some(times) = head.next() {
            let n: usize = times
                .strip_prefix('x')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("bad count {times:?}"))?;
            let [prefix, size] = words[..] else {
                return Err("want `L<n> xN: prefix size=N`".into());
            };
            let size = parse_size(size.strip_prefix("size=").ok_or("want size=N")?)?;
            for i in 0..n {
                number += 1;
                let k = format!("{prefix}{i:03}");
                edit.add_file(level, file(number, &format!("{k}-{k}"), size)?);
            }
            continue;
        }
        for pair in words.chunks(2) {
            let size = pair
                .get(1)
                .and_then(|s| s.strip_prefix("size="))
                .ok_or("want `lo-hi size=N`")?;
            number += 1;
            edit.add_file(level, file(number, pair[0], parse_size(size)?)?);
        }
    }
    let v = Version::new()
        .apply(&edit, "define")
        .map_err(|e| e.to_string())?;
    Ok((v, number))
}

fn run(cmd: &str, input: &[&str]) -> Result<String, String> {
    let mut words = cmd.split_whitespace();
    let name = words.next().unwrap_or("");
    if name != "define" {
        return Err(format!("unknown command {name:?}"));
    }
    let mut o = CompactionOptions::default();
    for a in words {
        let (k, v) = a.split_once('=').ok_or_else(|| format!("bad {a:?}"))?;
        let v = parse_size(v)?;
        match k {
            "base-level-bytes" => o.base_level_bytes = v,
            "target-file-size" => o.target_file_size = v,
            "slices" => o.lbase_slices = v,
            "split-bytes" => o.lbase_split_bytes = v,
            _ => return Err(format!("unknown argument {k:?}")),
        }
    }
    let (v, _) = define_version(input)?;
    let t = level_targets(&v, &o);
    let data: u64 = (0..NUM_LEVELS).map(|l| v.level_bytes(l)).sum();
    let split = split_bytes_of(&v, &o);
    let keys = cut_keys(v.files(t.base_level), split, &|f, parts| {
        let lo = String::from_utf8_lossy(crate::key::user_key(&f.smallest)).into_owned();
        (1..parts)
            .map(|i| format!("{lo}/{i:03}").into_bytes())
            .collect()
    });
    let keys: Vec<String> = keys
        .iter()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    let bound = if split > 0 {
        fmt_size(l0_base_max_bytes(&v, &t, &o, split))
    } else {
        format!("{} (L0 bytes only)", fmt_size(o.max_compaction_bytes))
    };
    Ok(format!(
        "base: L{} ({})\ndata: {}\nsplit: {}\npick bound: {bound}\ncuts: {}\n",
        t.base_level,
        fmt_size(v.level_bytes(t.base_level)),
        fmt_size(data),
        fmt_size(split),
        if keys.is_empty() {
            "(none)".to_string()
        } else {
            keys.join(" ")
        }
    ))
}

#[test]
fn lbase_cuts_data_driven() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compaction/testdata/lbase_cuts");
    let failures = crate::util::datadriven::check_dir(&dir, || {
        |cmd: &str, input: &[&str]| run(cmd, input).unwrap_or_else(|e| format!("error: {e}\n"))
    })
    .unwrap();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
