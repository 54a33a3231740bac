//! Data-driven tests of `L0Sublevels`: every `tests/data/sublevels/*.txt`
//! is a script of commands with their expected output.
//!
//! The file format is `strata::util::datadriven`'s (`STRATA_REWRITE=1`
//! writes the actual output back). Commands:
//!
//! - `define [split-bytes=N]` with one file per input line,
//!   `number: lo.KIND.seq-hi.KIND.seq [size=N] [seqs=A-B]` (KIND is SET,
//!   DEL, MERGE, SINGLEDEL or RANGEDEL; a seq of `max` with RANGEDEL is the
//!   exclusive end sentinel; size defaults to 100; seqs defaults to the
//!   range of the bounds' sequence numbers, sentinel excluded). Clears the
//!   compacting state; prints the sublevels.
//! - `sublevels`: prints `describe()`.
//! - `intervals`: prints `describe_intervals()`.
//! - `read-amp`: read amplification, sublevel count, depth after ongoing
//!   compactions.
//! - `flush-split-keys bytes=N`: rebuilds with that split size and prints
//!   the split keys.
//! - `compacting N,N,...` (or nothing): the files being compacted.
//! - `lbase-compacting lo-hi ...` (or nothing): Lbase ranges being
//!   compacted, seen by `pick-base` through its closure.
//! - `lbase lo-hi:size ...` (or nothing): the Lbase files, whose sizes
//!   `pick-base` counts against its `max` for the range it would cover
//!   (inclusive bounds, like the L0 files').
//! - `pick-base max=N [mark]`, `pick-intra min=N max=N [unflushed=N]
//!   [mark]`: prints the pick or `none` (`unflushed` is the earliest
//!   sequence number still in memory: no intra-L0 pick takes a file whose
//!   largest is that or more; default none); `mark` then marks the pick's
//!   files compacting (and, for `pick-base`, its key range as a running
//!   Lbase compaction).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use strata::key::{make_internal_key, ValueKind, MAX_SEQUENCE};
use strata::version::{FileMeta, L0Pick, L0Sublevels};

struct State {
    files: Vec<Arc<FileMeta>>,
    split_bytes: u64,
    compacting: HashSet<u64>,
    lbase_ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Lbase files: (lo, hi, size).
    lbase: Vec<(Vec<u8>, Vec<u8>, u64)>,
    s: L0Sublevels,
}

impl State {
    fn rebuild(&mut self) {
        self.s = L0Sublevels::new(&self.files, self.split_bytes);
        self.s.set_compacting(&self.compacting);
    }

    fn sublevels(&self) -> String {
        if self.s.num_sublevels() == 0 {
            "(empty)\n".to_string()
        } else {
            self.s.describe()
        }
    }

    fn read_amp(&self) -> String {
        format!(
            "read-amp={} sublevels={} after-ongoing={}\n",
            self.s.read_amplification(),
            self.s.num_sublevels(),
            self.s.max_depth_after_ongoing()
        )
    }
}

fn parse_bound(s: &str) -> Result<(Vec<u8>, u64, ValueKind), String> {
    let mut parts = s.rsplitn(3, '.');
    let (seq, kind, key) = match (parts.next(), parts.next(), parts.next()) {
        (Some(seq), Some(kind), Some(key)) => (seq, kind, key),
        _ => return Err(format!("bad bound {s:?}")),
    };
    let kind = match kind {
        "SET" => ValueKind::Value,
        "DEL" => ValueKind::Deletion,
        "MERGE" => ValueKind::Merge,
        "SINGLEDEL" => ValueKind::SingleDeletion,
        "RANGEDEL" => ValueKind::RangeDeletion,
        _ => return Err(format!("bad kind in {s:?}")),
    };
    let seq = if seq == "max" {
        MAX_SEQUENCE
    } else {
        seq.parse().map_err(|_| format!("bad seq in {s:?}"))?
    };
    Ok((key.as_bytes().to_vec(), seq, kind))
}

fn parse_file(line: &str) -> Result<FileMeta, String> {
    let (num, rest) = line
        .split_once(':')
        .ok_or_else(|| format!("bad file line {line:?}"))?;
    let number: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad number {num:?}"))?;
    let mut words = rest.split_whitespace();
    let range = words.next().ok_or("missing bounds")?;
    let (lo, hi) = range.split_once('-').ok_or("bad bounds")?;
    let (lo_key, lo_seq, lo_kind) = parse_bound(lo)?;
    let (hi_key, hi_seq, hi_kind) = parse_bound(hi)?;
    let seqs: Vec<u64> = [lo_seq, hi_seq]
        .into_iter()
        .filter(|&s| s != MAX_SEQUENCE)
        .collect();
    let mut f = FileMeta {
        number,
        size: 100,
        smallest: make_internal_key(&lo_key, lo_seq, lo_kind),
        largest: make_internal_key(&hi_key, hi_seq, hi_kind),
        smallest_seq: seqs.iter().copied().min().unwrap_or(0),
        largest_seq: seqs.iter().copied().max().unwrap_or(0),
        global_seqno: None,
        num_entries: 1,
        num_deletions: 0,
        num_range_deletions: 0,
        backing: None,
    };
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("bad arg {w:?}"))?;
        match k {
            "size" => f.size = v.parse().map_err(|_| format!("bad size {v:?}"))?,
            "seqs" => {
                let (a, b) = v.split_once('-').ok_or("bad seqs")?;
                f.smallest_seq = a.parse().map_err(|_| "bad seqs")?;
                f.largest_seq = b.parse().map_err(|_| "bad seqs")?;
            }
            _ => return Err(format!("unknown file arg {k:?}")),
        }
    }
    Ok(f)
}

fn arg(args: &[&str], name: &str) -> Result<u64, String> {
    args.iter()
        .find_map(|a| a.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .ok_or_else(|| format!("missing {name}="))?
        .parse()
        .map_err(|_| format!("bad {name}="))
}

fn fmt_pick(p: &Option<L0Pick>) -> String {
    let Some(p) = p else {
        return "none\n".to_string();
    };
    let files: Vec<String> = p.files.iter().map(|f| f.number.to_string()).collect();
    format!(
        "files: {}\nrange: [{}-{}{}\nseed: {} depth={} bytes={}\n",
        files.join(" "),
        String::from_utf8_lossy(&p.smallest),
        String::from_utf8_lossy(&p.largest),
        if p.largest_exclusive { ")" } else { "]" },
        String::from_utf8_lossy(&p.seed_key),
        p.seed_depth,
        p.bytes
    )
}

fn mark(st: &mut State, p: &Option<L0Pick>, base: bool) {
    if let Some(p) = p {
        st.compacting.extend(p.files.iter().map(|f| f.number));
        if base {
            st.lbase_ranges
                .push((p.smallest.clone(), p.largest.clone()));
        }
        st.s.set_compacting(&st.compacting);
    }
}

fn run(st: &mut State, cmd: &str, input: &[&str]) -> Result<String, String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let (name, args) = words.split_first().ok_or("empty command")?;
    Ok(match *name {
        "define" => {
            st.files = input
                .iter()
                .map(|l| parse_file(l).map(Arc::new))
                .collect::<Result<_, _>>()?;
            st.split_bytes = arg(args, "split-bytes").unwrap_or(0);
            st.compacting.clear();
            st.lbase_ranges.clear();
            st.lbase.clear();
            st.rebuild();
            st.sublevels()
        }
        "sublevels" => st.sublevels(),
        "intervals" => st.s.describe_intervals(),
        "read-amp" => st.read_amp(),
        "flush-split-keys" => {
            st.split_bytes = arg(args, "bytes")?;
            st.rebuild();
            let keys: Vec<String> =
                st.s.flush_split_keys()
                    .iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect();
            if keys.is_empty() {
                "none\n".to_string()
            } else {
                format!("{}\n", keys.join(" "))
            }
        }
        "compacting" => {
            st.compacting = args
                .iter()
                .flat_map(|a| a.split(','))
                .filter(|n| !n.is_empty())
                .map(|n| n.parse().map_err(|_| format!("bad file number {n:?}")))
                .collect::<Result<_, _>>()?;
            st.s.set_compacting(&st.compacting);
            st.read_amp()
        }
        "lbase-compacting" => {
            st.lbase_ranges = args
                .iter()
                .map(|r| {
                    let (lo, hi) = r.split_once('-').ok_or("bad range")?;
                    Ok((lo.as_bytes().to_vec(), hi.as_bytes().to_vec()))
                })
                .collect::<Result<_, String>>()?;
            "ok\n".to_string()
        }
        "lbase" => {
            st.lbase = args
                .iter()
                .map(|w| {
                    let (r, size) = w.split_once(':').ok_or("bad lbase file")?;
                    let (lo, hi) = r.split_once('-').ok_or("bad range")?;
                    let size = size.parse().map_err(|_| format!("bad size {size:?}"))?;
                    Ok((lo.as_bytes().to_vec(), hi.as_bytes().to_vec(), size))
                })
                .collect::<Result<_, String>>()?;
            "ok\n".to_string()
        }
        "pick-base" => {
            let ranges = st.lbase_ranges.clone();
            let overlaps = move |lo: &[u8], hi: &[u8]| {
                ranges
                    .iter()
                    .any(|(a, b)| lo <= b.as_slice() && a.as_slice() <= hi)
            };
            let lbase = st.lbase.clone();
            let lbase_bytes = move |lo: &[u8], hi: &[u8]| -> u64 {
                lbase
                    .iter()
                    .filter(|(a, b, _)| lo <= b.as_slice() && a.as_slice() <= hi)
                    .map(|(_, _, size)| size)
                    .sum()
            };
            let p =
                st.s.pick_base_compaction(arg(args, "max")?, &overlaps, &lbase_bytes);
            let out = fmt_pick(&p);
            if args.contains(&"mark") {
                mark(st, &p, true);
            }
            out
        }
        "pick-intra" => {
            let unflushed = arg(args, "unflushed").unwrap_or(u64::MAX);
            let p = st.s.pick_intra_l0_compaction(
                arg(args, "min")? as usize,
                arg(args, "max")?,
                unflushed,
            );
            let out = fmt_pick(&p);
            if args.contains(&"mark") {
                mark(st, &p, false);
            }
            out
        }
        _ => return Err(format!("unknown command {name:?}")),
    })
}

#[test]
fn sublevels_data_driven() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sublevels");
    let failures = strata::util::datadriven::check_dir(&dir, || {
        let mut st = State {
            files: Vec::new(),
            split_bytes: 0,
            compacting: HashSet::new(),
            lbase_ranges: Vec::new(),
            lbase: Vec::new(),
            s: L0Sublevels::new(&[], 0),
        };
        move |cmd: &str, input: &[&str]| {
            run(&mut st, cmd, input).unwrap_or_else(|e| format!("error: {e}\n"))
        }
    })
    .unwrap();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
