//! Data-driven tests of what the picker chooses for a given tree and
//! options (`picker::pick`): every `testdata/pick/*.txt` is a script of
//! commands with their expected output. Run with `STRATA_REWRITE=1` to
//! write the actual output back into the files (then read the diff before
//! committing it).
//!
//! The file format is `util::datadriven`'s. Commands:
//!
//! - `define [threshold=N] [file-threshold=N] [sublevels=0|1]`: the
//!   options (`l0_compaction_threshold`, `l0_compaction_file_threshold`,
//!   `l0_sublevels`; defaults otherwise) and the version, one level per
//!   input line, `L<n>: lo-hi size=N ...` as in `lbase_cuts_data`, or
//!   `L0 xN: prefix size=N` for N single-key L0 files `prefix000` ...
//!   (three digits). Files are numbered in input order, and a file's
//!   sequence numbers are its number, so a later L0 line stacks above an
//!   earlier one it overlaps. Prints L0's sublevels and files.
//! - `pick`: L0's two score terms and the compaction picked (reason,
//!   levels, input files by number), or `none`. `pick apply` also applies
//!   it as if it had run (inputs out, one output file over their range
//!   in, numbered after the last) and prints the L0 that remains.

#![allow(clippy::unwrap_used)] // tests may unwrap

use super::lbase_cuts_data::{define_version, file, parse_size};
use super::picker::{l0_terms, pick, CompactionOptions, Running, Unflushed};
use crate::version::{L0Sublevels, Version, VersionEdit};
use std::path::Path;

#[derive(Default)]
struct State {
    v: Option<Version>,
    o: CompactionOptions,
    next: u64,
}

fn l0_summary(v: &Version, o: &CompactionOptions) -> String {
    let sub = L0Sublevels::new(v.files(0), o.flush_split_bytes);
    format!(
        "L0: {} files, {} sublevels\n",
        v.files(0).len(),
        sub.num_sublevels()
    )
}

fn define(st: &mut State, args: &[&str], input: &[&str]) -> Result<String, String> {
    let mut o = CompactionOptions::default();
    for a in args {
        let (k, v) = a.split_once('=').ok_or_else(|| format!("bad {a:?}"))?;
        let n = parse_size(v)?;
        match k {
            "threshold" => o.l0_compaction_threshold = n as usize,
            "file-threshold" => o.l0_compaction_file_threshold = n as usize,
            "sublevels" => o.l0_sublevels = n != 0,
            _ => return Err(format!("unknown argument {k:?}")),
        }
    }
    let (v, number) = define_version(input)?;
    let out = l0_summary(&v, &o);
    *st = State {
        v: Some(v),
        o,
        next: number + 1,
    };
    Ok(out)
}

fn do_pick(st: &mut State, apply: bool) -> Result<String, String> {
    let v = st.v.as_ref().ok_or("define first")?;
    let o = &st.o;
    let sub = L0Sublevels::new(v.files(0), o.flush_split_bytes);
    let running = Running::default();
    let unflushed = Unflushed {
        earliest: u64::MAX,
        earliest_in: &|_, _| u64::MAX,
    };
    let (depth, count) = l0_terms(v, &sub, &running, o);
    let mut out = format!("l0 score: depth {depth:.2} count {count:.2}\n");
    let Some(c) = pick(v, &sub, &running, o, &unflushed) else {
        out.push_str("none\n");
        return Ok(out);
    };
    let nums = |fs: &[std::sync::Arc<crate::version::FileMeta>]| {
        let mut n: Vec<u64> = fs.iter().map(|f| f.number).collect();
        n.sort_unstable();
        let s: Vec<String> = n.iter().map(u64::to_string).collect();
        if s.is_empty() {
            "(none)".to_string()
        } else {
            s.join(" ")
        }
    };
    out.push_str(&format!(
        "{}: L{} -> L{}\ninputs: {} files: {}\noutput-level inputs: {}\n",
        c.reason.name(),
        c.start_level,
        c.output_level,
        c.inputs.len(),
        nums(&c.inputs),
        nums(&c.output_inputs)
    ));
    if apply {
        let mut edit = VersionEdit::default();
        for (l, f) in c.all_inputs() {
            edit.delete_file(l, f.number);
        }
        let lo = String::from_utf8_lossy(&c.smallest).into_owned();
        let hi = String::from_utf8_lossy(&c.largest).into_owned();
        let size = c.input_bytes();
        edit.add_file(c.output_level, file(st.next, &format!("{lo}-{hi}"), size)?);
        st.next += 1;
        let nv = v.apply(&edit, "pick").map_err(|e| e.to_string())?;
        out.push_str(&format!("after: {}", l0_summary(&nv, o)));
        st.v = Some(nv);
    }
    Ok(out)
}

fn run(st: &mut State, cmd: &str, input: &[&str]) -> Result<String, String> {
    let mut words = cmd.split_whitespace();
    let name = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    match name {
        "define" => define(st, &args, input),
        "pick" => do_pick(st, args == ["apply"]),
        _ => Err(format!("unknown command {name:?}")),
    }
}

#[test]
fn picker_data_driven() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compaction/testdata/pick");
    let failures = crate::util::datadriven::check_dir(&dir, || {
        let mut st = State::default();
        move |cmd: &str, input: &[&str]| {
            run(&mut st, cmd, input).unwrap_or_else(|e| format!("error: {e}\n"))
        }
    })
    .unwrap();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
