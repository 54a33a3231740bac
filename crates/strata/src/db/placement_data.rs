//! Data-driven tests of ingestion placement (`ingest::place_all` with the
//! Lbase that `compaction::picker::level_targets` computes): every
//! `testdata/placement/*.txt` is a script of commands with their expected
//! output. Run with `STRATA_REWRITE=1` to write the actual output back into
//! the files (then read the diff before committing it).
//!
//! The file format is `util::datadriven`'s. Commands:
//!
//! - `define [base-level-bytes=N] [multiplier=N]`: the version, one level
//!   per input line, `L<n>: lo-hi[)] [size=N] ...` (a `)` after `hi` makes
//!   it a range tombstone's exclusive end; size defaults to 1000). Clears
//!   the running compactions. Prints Lbase and the levels.
//! - `running [L<n>:lo-hi ...]`: running compactions' output ranges (none
//!   clears them).
//! - `place`: one ingestion, a file per input line (`lo-hi[)]`), placed in
//!   order; prints each file's level.

#![allow(clippy::unwrap_used)] // tests may unwrap

use super::ingest::{place_all, Prepared};
use crate::compaction::picker::{level_targets, CompactionOptions, Running};
use crate::version::{Version, VersionEdit, NUM_LEVELS};
use std::path::Path;

struct State {
    v: Version,
    opts: CompactionOptions,
    running: Running,
    next_number: u64,
}

/// `lo-hi` or `lo-hi)` as (lo, hi, exclusive).
fn parse_range(s: &str) -> Result<(Vec<u8>, Vec<u8>, bool), String> {
    let (body, exclusive) = match s.strip_suffix(')') {
        Some(b) => (b, true),
        None => (s, false),
    };
    let (lo, hi) = body
        .split_once('-')
        .ok_or_else(|| format!("bad range {s:?}"))?;
    Ok((lo.as_bytes().to_vec(), hi.as_bytes().to_vec(), exclusive))
}

fn prepared(number: u64, range: &str, size: u64) -> Result<Prepared, String> {
    let (lo, hi, exclusive) = parse_range(range)?;
    Ok(Prepared {
        number,
        size,
        smallest_user: lo,
        largest_user: hi,
        largest_exclusive: exclusive,
        num_entries: 1,
        num_deletions: 0,
        num_range_deletions: u64::from(exclusive),
        excise_tombstone: false,
        opened: None,
    })
}

fn level_of(s: &str) -> Result<usize, String> {
    s.strip_prefix('L')
        .and_then(|n| n.parse().ok())
        .filter(|&l| l < NUM_LEVELS)
        .ok_or_else(|| format!("bad level {s:?}"))
}

fn describe(st: &State) -> String {
    let base = level_targets(&st.v, &st.opts).base_level;
    let mut out = format!("base: L{base}\n");
    for l in 0..NUM_LEVELS {
        let files = st.v.files(l);
        if files.is_empty() {
            continue;
        }
        let names: Vec<String> = files
            .iter()
            .map(|f| {
                let lo = crate::key::user_key(&f.smallest);
                let hi = crate::key::user_key(&f.largest);
                let end = if f.largest_is_exclusive() { ")" } else { "" };
                format!(
                    "{}-{}{end}",
                    String::from_utf8_lossy(lo),
                    String::from_utf8_lossy(hi)
                )
            })
            .collect();
        out.push_str(&format!("L{l}: {}\n", names.join(" ")));
    }
    out
}

fn run(st: &mut State, cmd: &str, input: &[&str]) -> Result<String, String> {
    let mut words = cmd.split_whitespace();
    let name = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    let arg = |key: &str| -> Result<Option<u64>, String> {
        args.iter()
            .filter_map(|a| a.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(|v| v.parse().map_err(|_| format!("bad {key}={v}")))
            .next()
            .transpose()
    };
    Ok(match name {
        "define" => {
            st.opts = CompactionOptions::default();
            if let Some(b) = arg("base-level-bytes")? {
                st.opts.base_level_bytes = b;
            }
            if let Some(m) = arg("multiplier")? {
                st.opts.level_multiplier = m;
            }
            st.running = Running::default();
            let mut edit = VersionEdit::default();
            let mut seq = 1;
            for line in input {
                let (level, files) = line.split_once(':').ok_or("want `L<n>: files`")?;
                let level = level_of(level.trim())?;
                let mut pending: Option<Prepared> = None;
                for w in files.split_whitespace() {
                    if let Some(size) = w.strip_prefix("size=") {
                        let p = pending.as_mut().ok_or("size= before a file")?;
                        p.size = size.parse().map_err(|_| format!("bad {w}"))?;
                        continue;
                    }
                    if let Some(p) = pending.take() {
                        edit.add_file(level, p.meta(seq));
                        seq += 1;
                    }
                    st.next_number += 1;
                    pending = Some(prepared(st.next_number, w, 1000)?);
                }
                if let Some(p) = pending.take() {
                    edit.add_file(level, p.meta(seq));
                    seq += 1;
                }
            }
            st.v = Version::new()
                .apply(&edit, "define")
                .map_err(|e| e.to_string())?;
            describe(st)
        }
        "running" => {
            st.running = Running::default();
            for a in &args {
                let (level, range) = a.split_once(':').ok_or("want L<n>:lo-hi")?;
                let (lo, hi, _) = parse_range(range)?;
                st.running.outputs.push((level_of(level)?, lo, hi));
            }
            "ok\n".to_string()
        }
        "place" => {
            let mut files = Vec::new();
            for line in input {
                st.next_number += 1;
                files.push(prepared(st.next_number, line, 1000)?);
            }
            let refs: Vec<&Prepared> = files.iter().collect();
            let base = level_targets(&st.v, &st.opts).base_level;
            let levels = place_all(&st.v, &refs, &st.running, base);
            input
                .iter()
                .zip(levels)
                .map(|(f, l)| format!("{f} -> L{l}\n"))
                .collect()
        }
        _ => return Err(format!("unknown command {name:?}")),
    })
}

#[test]
fn placement_data_driven() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/db/testdata/placement");
    let failures = crate::util::datadriven::check_dir(&dir, || {
        let mut st = State {
            v: Version::new(),
            opts: CompactionOptions::default(),
            running: Running::default(),
            next_number: 0,
        };
        move |cmd: &str, input: &[&str]| {
            run(&mut st, cmd, input).unwrap_or_else(|e| format!("error: {e}\n"))
        }
    })
    .unwrap();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
