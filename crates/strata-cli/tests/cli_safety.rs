//! The CLI never harms data: read commands on a path that is not a
//! database fail clearly and leave the file system as it was; `dump` →
//! `load` round-trips any key and value (binary, newlines, ` ==> `) in both
//! line formats; `scan` options; `load` streams in bounded memory and
//! flushes; `lsm` reports the database's history, not the process's.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use strata::{Db, Options};

mod common;
use common::strata;

/// Every path under `root` with its size (files) or `None` (directories).
fn tree(root: &Path) -> BTreeMap<String, Option<u64>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let md = e.metadata().unwrap();
            let name = p.strip_prefix(root).unwrap().display().to_string();
            if md.is_dir() {
                out.insert(name, None);
                stack.push(p);
            } else {
                out.insert(name, Some(md.len()));
            }
        }
    }
    out
}

/// `get`, `scan`, `dump`, `lsm` and `delete` on a missing path, a plain
/// file and a directory that is not a database: each fails, says what the
/// path is, and nothing under the root changes.
#[test]
fn read_commands_never_create_a_database() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("file");
    std::fs::write(&file, b"not a database").unwrap();
    let other = root.path().join("photos");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("cat.jpg"), b"jpeg").unwrap();
    let missing = root.path().join("typo-db");
    let before = tree(root.path());
    let cases = [
        (missing, "no database at"),
        (file, "is not a Strata database: it is a file"),
        (
            other,
            "is not a Strata database: the directory has no CURRENT",
        ),
    ];
    let mut checked = 0;
    for (path, says) in &cases {
        let p = path.to_str().unwrap();
        for args in [
            vec!["kv", "get", p, "k"],
            vec!["kv", "scan", p],
            vec!["kv", "scan", "--reverse", "--count", p],
            vec!["kv", "dump", p],
            vec!["kv", "dump", "--json", p],
            vec!["lsm", p],
            vec!["kv", "delete", p, "k"],
        ] {
            let (ok, out, err) = strata(&args);
            assert!(!ok, "{args:?} succeeded: {out}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(err.contains(p), "{args:?} does not name the path: {err}");
            assert_eq!(
                tree(root.path()),
                before,
                "{args:?} changed the file system"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 21);
}

/// Random keys and values, rich in newlines, backslashes, invalid UTF-8
/// and ` ==> `, written with the library, dumped, loaded into a second
/// database and compared with the library: equal in both formats.
#[test]
fn dump_load_round_trips_any_bytes() {
    let pieces: &[&[u8]] = &[
        b"a",
        b"z",
        b" ",
        b"==>",
        b" ==> ",
        b"\\",
        b"\\x41",
        b"\n",
        b"\r\n",
        b"\t",
        b"\x00",
        b"\xff",
        b"\xc3",
        "\u{e9}".as_bytes(),
        b"0x",
        b":",
    ];
    for seed in 0..3u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut gen = |max: usize| -> Vec<u8> {
            (0..rng.gen_range(0..max))
                .flat_map(|_| pieces[rng.gen_range(0..pieces.len())].to_vec())
                .collect()
        };
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        let mut want = BTreeMap::new();
        {
            let db = Db::open_default(&src).unwrap();
            for _ in 0..400 {
                let (k, v) = (gen(6), gen(10));
                db.put(&k, &v).unwrap();
                want.insert(k, v);
            }
        }
        for format in [&[][..], &["--hex"][..]] {
            let (ok, dumped, err) =
                strata(&[&["kv", "dump"], format, &[src.to_str().unwrap()]].concat());
            assert!(ok, "{err}");
            assert_eq!(dumped.lines().count(), want.len(), "one line per entry");
            let file = d.path().join(format!("dump{}.txt", format.len()));
            std::fs::write(&file, &dumped).unwrap();
            let dst = d.path().join(format!("dst{}", format.len()));
            let (ok, _, err) = strata(
                &[
                    &["kv", "load"],
                    format,
                    &[dst.to_str().unwrap(), file.to_str().unwrap()],
                ]
                .concat(),
            );
            assert!(ok, "seed {seed} {format:?}: {err}");
            let db = Db::open(
                &dst,
                Options {
                    create_if_missing: false,
                    ..Options::default()
                },
            )
            .unwrap();
            let got: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().collect::<Result<_, _>>().unwrap();
            assert!(got == want, "seed {seed} {format:?}: contents differ");
            // `scan` prints exactly the lines `dump` does.
            let (_, scanned, _) =
                strata(&[&["kv", "scan"], format, &[src.to_str().unwrap()]].concat());
            assert_eq!(scanned, dumped);
        }
    }
}

#[test]
fn scan_options() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    {
        let db = Db::open_default(&db).unwrap();
        for k in ["a1", "a2", "a3", "b1", "b2", "c"] {
            db.put(k, k.to_uppercase()).unwrap();
        }
    }
    let p = db.to_str().unwrap();
    let keys = |args: &[&str]| -> Vec<String> {
        let (ok, out, err) = strata(&[&["kv", "scan"], args, &[p]].concat());
        assert!(ok, "{err}");
        out.lines()
            .map(|l| l.split(" ==> ").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys(&["--prefix", "a"]), ["a1", "a2", "a3"]);
    assert_eq!(keys(&["--prefix", "a", "--reverse"]), ["a3", "a2", "a1"]);
    assert_eq!(keys(&["--reverse", "--limit", "2"]), ["c", "b2"]);
    assert_eq!(keys(&["--from", "a2", "--to", "b2"]), ["a2", "a3", "b1"]);
    assert_eq!(keys(&["--prefix", "b", "--from", "b2"]), ["b2"]);
    assert_eq!(
        strata(&["kv", "scan", "--count", "--prefix", "b", p]).1,
        "2\n"
    );
    assert_eq!(
        strata(&["kv", "scan", "--json", "--prefix", "c", p]).1,
        "{\"key\":\"c\",\"value\":\"C\"}\n"
    );
}

/// `load` streams: loading an input twice the size of the bound keeps the
/// process's peak RSS under it. The bound: the memtables (2 MiB each, at
/// most 1 + 4 queued), the load's 8 MiB block cache, and 40 MiB for the
/// binary, table readers, compaction buffers and the allocator (measured:
/// 39 MiB here; a 1 GB input, outside CI, peaked at 65 MiB). The old
/// load read the whole input first (163 MB RSS for a 29 MB file). The
/// loaded database is flushed, and `lsm` in a new process reports the
/// flush from EVENTS.
#[test]
fn load_streams_in_bounded_memory_and_flushes() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("big.txt");
    // 800,000 rows of ~150 bytes: ~120 MB, out of key order.
    {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let value = "v".repeat(120);
        for i in 0..800_000u64 {
            let k = (i * 7_919) % 800_000;
            writeln!(w, "key{k:012} ==> {value}{i}").unwrap();
        }
    }
    let size = std::fs::metadata(&input).unwrap().len();
    assert!(size > 110 << 20, "input is {size} bytes");
    let db = d.path().join("db");
    let (ok, out, err) = strata(&[
        "kv",
        "load",
        "--memtable-mib",
        "2",
        "--report-peak-rss",
        db.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("loaded 800000 rows"), "{out}");
    let kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("peak RSS "))
        .and_then(|s| s.trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {err:?}"));
    let bound_kib = (5 * 2 + 8 + 40) << 10;
    eprintln!("load of {size} bytes: peak RSS {kib} KiB (bound {bound_kib} KiB)");
    assert!(kib < bound_kib, "peak RSS {kib} KiB over {bound_kib} KiB");
    assert!(
        kib << 10 < size,
        "peak RSS {kib} KiB: the input was held in memory"
    );
    // Flushed: nothing is left in a WAL.
    let wal_bytes: u64 = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(wal_bytes < 4096, "{wal_bytes} bytes left in WALs");
    let (ok, out, err) = strata(&["lsm", db.to_str().unwrap()]);
    assert!(ok, "{err}");
    let flushes: u64 = out
        .split("; ")
        .find_map(|s| {
            s.strip_suffix(" B)")
                .and_then(|s| s.split(" flushes").next())
        })
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no flush count in {out}"));
    assert!(flushes >= 1, "{out}");
}

/// Help texts that said what the commands do not do: `import --help` told
/// users to put FILEs before "a bare --header", which is an error;
/// `ingest --help` called `--small-file-bytes` the files' total bytes (it
/// is their uncompressed keys and values); `kv load --help` put memory at
/// "about 5x" the memtable (a load at 8 MiB peaked near 80 MB).
#[test]
fn help_texts_say_what_the_commands_do() {
    let help = |args: &[&str]| {
        let (ok, out, err) = strata(args);
        assert!(ok, "{err}");
        // Clap wraps long help to the terminal; join the lines.
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let import = help(&["import", "--help"]);
    assert!(!import.contains("before a bare --header"), "{import}");
    assert!(
        import.contains("--header takes a value, skip or match"),
        "{import}"
    );
    let (ok, _, err) = strata(&[
        "import", "db", "--schema", "s.sql", "--table", "t", "f.csv", "--header",
    ]);
    assert!(
        !ok && err.contains("a value is required for '--header"),
        "{err}"
    );
    let ingest = help(&["ingest", "--help"]);
    assert!(!ingest.contains("(total bytes)"), "{ingest}");
    assert!(
        ingest.contains("(uncompressed key and value bytes, not file size)"),
        "{ingest}"
    );
    let load = help(&["kv", "load", "--help"]);
    assert!(!load.contains("about 5x this"), "{load}");
    assert!(
        load.contains("at most about 5 memtables") && load.contains("72 MiB"),
        "{load}"
    );
}

/// `stress` (a test tool) is not in the user's command list but still runs.
#[test]
fn stress_is_hidden() {
    let (ok, help, _) = strata(&["--help"]);
    assert!(ok);
    assert!(help.contains("dump") && help.contains("lsm"), "{help}");
    assert!(!help.contains("stress"), "{help}");
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let (ok, _, err) = strata(&["stress", "--keys", "20", db.to_str().unwrap()]);
    assert!(ok, "{err}");
}

/// `strata kv dump db | head -1`: the reader closes the pipe after one
/// line. The command stops quietly with success (as `cat` does), without
/// an I/O error about a pipe the user closed, and the database is intact.
#[test]
fn a_closed_output_pipe_is_not_an_error() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    {
        let db = Db::open_default(&path).unwrap();
        for i in 0..50_000u32 {
            db.put(format!("key{i:08}"), vec![b'v'; 100]).unwrap();
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["kv", "dump", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("key00000000 ==> "), "{first:?}");
    // The reader is dropped here: the pipe is closed with ~5 MB unread.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
    let (ok, count, _) = strata(&["kv", "dump", path.to_str().unwrap()]);
    assert!(ok);
    assert_eq!(count.lines().count(), 50_000);
}

/// Every command that prints, with its standard output closed before it
/// starts (a pipe whose reader is gone) and with it full (`/dev/full`):
/// no panic. A closed pipe ends the command quietly with success, as
/// `a_closed_output_pipe_is_not_an_error` says; a full device is an error
/// naming `<stdout>`. An import whose summary cannot be printed has still
/// committed: its rows are there.
#[test]
fn closed_or_full_standard_output_never_panics() {
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    let schema = d.path().join("t.sql");
    std::fs::write(&schema, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);\n").unwrap();
    let csv = d.path().join("t.csv");
    std::fs::write(&csv, "1,a\n2,b\n3,c\n").unwrap();
    let db = d.path().join("db").display().to_string();
    let db2 = d.path().join("db2").display().to_string();
    let (schema, csv) = (schema.display().to_string(), csv.display().to_string());
    let sst = d.path().join("x.sst").display().to_string();
    {
        let mut w = strata::SstWriter::create(&sst, strata::SstOptions::for_ingestion()).unwrap();
        w.put("zz", "v").unwrap();
        w.finish().unwrap();
    }
    let (ok, _, e) = strata(&["kv", "put", &db, "zz", "v"]);
    assert!(ok, "{e}");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let commands: Vec<Vec<String>> = [
        vec!["import", &db, "--schema", &schema, "--table", "t", &csv],
        vec!["tables", &db],
        vec!["get", &db, "t", "1"],
        vec!["count", &db, "t"],
        vec!["lsm", &db],
        vec!["check", &db],
        vec!["kv", "get", &db, "zz"],
        vec!["sst", "verify", &sst],
        vec!["sst", "dump", &sst],
    ]
    .iter()
    .map(|v| v.iter().map(|s| s.to_string()).collect())
    .collect();
    for (i, args) in commands.iter().enumerate() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(args)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}, closed pipe: {err}");
        assert!(
            out.status.success(),
            "{args:?}, closed pipe: {:?} {err}",
            out.status
        );
        if i == 0 {
            let (ok, n, e) = strata(&["count", &db, "t"]);
            assert!(ok && n.trim() == "3", "the import did not commit: {n} {e}");
        }
        let Ok(full) = &full else { continue };
        // The import again, into a new database (the first holds its rows).
        let args: Vec<String> = match i {
            0 => args
                .iter()
                .map(|a| if *a == db { db2.clone() } else { a.clone() })
                .collect(),
            _ => args.clone(),
        };
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(&args)
            .stdout(Stdio::from(full.try_clone().unwrap()))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}, full: {err}");
        assert_eq!(out.status.code(), Some(1), "{args:?}, full: {err}");
        assert!(err.contains("<stdout>"), "{args:?}, full: {err}");
        if i == 0 {
            assert!(err.contains("the import committed"), "{err}");
            let (ok, n, e) = strata(&["count", &db2, "t"]);
            assert!(ok && n.trim() == "3", "the import did not commit: {n} {e}");
        }
    }
}

/// `kv load` from a pipe or FIFO (`<(cmd)`, `/dev/stdin`): read once and
/// loaded (a first checking pass used to consume it, and the load then
/// found 0 rows and exited 0); a bad line there keeps the rows before it
/// and says how many.
#[test]
fn load_from_a_pipe_loads_every_row() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let run_from = |input: &str, db: &Path, file: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args([
                "kv",
                "load",
                "--batch-rows",
                "1000",
                db.to_str().unwrap(),
                file,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let run = |input: &str, db: &Path| run_from(input, db, "/dev/stdin");
    let good: String = (0..2500).map(|i| format!("k{i:05} ==> v{i}\n")).collect();
    // `-` is standard input too (it used to be opened as a file named `-`).
    let db3 = d.path().join("db3");
    let (ok, err) = run_from(&good, &db3, "-");
    assert!(ok, "{err}");
    let (_, out, _) = strata(&["kv", "scan", db3.to_str().unwrap(), "--count"]);
    assert_eq!(out.trim(), "2500");
    let (ok, err) = run(&good, &db);
    assert!(ok, "{err}");
    let (_, out, _) = strata(&["kv", "scan", db.to_str().unwrap(), "--count"]);
    assert_eq!(out.trim(), "2500");
    let db2 = d.path().join("db2");
    let (ok, err) = run(&format!("{good}bad line\n"), &db2);
    assert!(
        !ok && err.contains("the 2500 rows before the error (to line 2500) were loaded"),
        "{err}"
    );
    let (_, out, _) = strata(&["kv", "scan", db2.to_str().unwrap(), "--count"]);
    assert_eq!(out.trim(), "2500");
}

/// `cmd` with every file it writes limited to `limit` bytes
/// (`RLIMIT_FSIZE`): a write past it fails with EFBIG, as one on a full
/// disk fails with ENOSPC.
fn with_file_size_limit(cmd: &mut std::process::Command, limit: u64) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only async-signal-safe calls:
    // setrlimit and signal (SIGXFSZ ignored, so a write past the limit
    // fails with EFBIG instead of killing the process).
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        })
    }
}

/// `sst write` that runs out of room leaves the path as it was: no
/// partial table (it used to leave a truncated file that `verify` called
/// corrupt), and a table already there unchanged.
#[test]
fn sst_write_that_runs_out_of_room_leaves_the_path_as_it_was() {
    use std::process::Command;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("x.sst");
    let p = out.to_str().unwrap();
    let (ok, _, err) = strata(&["sst", "write", p, "--keys", "1000"]);
    assert!(ok, "{err}");
    let before = std::fs::read(&out).unwrap();
    let r = with_file_size_limit(
        Command::new(env!("CARGO_BIN_EXE_strata")).args(["sst", "write", p, "--keys", "200000"]),
        256 << 10,
    )
    .output()
    .unwrap();
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("File too large"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "the old table changed"
    );
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["x.sst".to_string()], "a partial file was left");
    let (ok, _, err) = strata(&["sst", "verify", p]);
    assert!(ok, "{err}");
}

/// `kv load` that runs out of room (a file-size limit, `RLIMIT_FSIZE`,
/// stands in for a full disk: every write past it fails) says what is in
/// the database truthfully: every row before the line it says to load
/// again from is there, with its value. It used to count a batch as loaded
/// before writing it, and the acknowledged rows the failing WAL never
/// wrote as loaded too (69,000 claimed, 65,000 there, in an audit).
#[test]
fn load_that_runs_out_of_room_says_what_it_loaded() {
    use std::process::Command;
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.txt");
    let rows = 60_000u64;
    let value = "v".repeat(200);
    let text: String = (1..=rows)
        .map(|i| format!("k{i:06} ==> {value}{i}\n"))
        .collect();
    std::fs::write(&input, text).unwrap();
    // (file-size limit, WAL synced every ... ms: 0 is every batch)
    for (limit, sync_ms) in [(64u64 << 10, "1000"), (512 << 10, "0"), (900 << 10, "0")] {
        let db = d.path().join(format!("db-{limit}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args(["kv", "load", "--memtable-mib", "1", "--batch-rows", "100"])
            .args(["--sync-interval-ms", sync_ms])
            .arg(&db)
            .arg(&input);
        let out = with_file_size_limit(&mut cmd, limit).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success(),
            "limit {limit}: loaded everything: {err}"
        );
        // The first line the message does not vouch for.
        let from = if let Some(at) = err.find("load again from line ") {
            let rest = &err[at + "load again from line ".len()..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        } else if let Some(at) = err.find(" rows before the error (to line ") {
            let rest = &err[at + " rows before the error (to line ".len()..];
            1 + rest.split(')').next().unwrap().parse::<u64>().unwrap()
        } else {
            panic!("limit {limit}: no account of what was loaded: {err}");
        };
        let db = Db::open(&db, Options::default()).unwrap();
        for i in 1..from {
            let got = db.get(format!("k{i:06}")).unwrap();
            assert_eq!(
                got.as_deref(),
                Some(format!("{value}{i}").as_bytes()),
                "limit {limit}: row {i} missing, though the load said rows before line {from} \
                 are in: {err}"
            );
        }
        eprintln!("limit {limit}: rows before line {from} vouched for and present: {err}");
        if sync_ms == "0" {
            assert!(
                from > 1000,
                "limit {limit}: synced batches vouched for: {err}"
            );
        }
    }
}

/// `kv load` of an input it cannot read (a missing file, a directory)
/// fails before it opens the database: a missing path stays missing and an
/// empty directory stays empty (it used to become an empty database).
#[test]
fn load_of_an_unreadable_input_creates_nothing() {
    let root = tempfile::tempdir().unwrap();
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = root.path().join("new-db");
    let no_file = root.path().join("no-such-input.txt");
    let before = tree(root.path());
    for db in [&missing, &empty] {
        for (input, says) in [(&no_file, "No such file"), (&empty, "is a directory")] {
            let args = ["kv", "load", db.to_str().unwrap(), input.to_str().unwrap()];
            let (ok, out, err) = strata(&args);
            assert!(!ok, "{args:?} succeeded: {out}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(
                err.contains(input.to_str().unwrap()),
                "{args:?} does not name the input: {err}"
            );
            assert_eq!(
                tree(root.path()),
                before,
                "{args:?} changed the file system"
            );
        }
    }
}

/// `sst dump` and `sst verify` of a directory say so (they used to report
/// an I/O error at a made-up offset: the directory's size less a footer).
#[test]
fn sst_commands_on_a_directory_say_it_is_one() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().to_str().unwrap();
    for cmd in ["dump", "verify"] {
        let (ok, _, err) = strata(&["sst", cmd, dir]);
        assert!(!ok, "sst {cmd} of a directory succeeded");
        assert!(
            err.contains(&format!("{dir} is a directory, not an SST file"))
                && !err.contains("offset"),
            "sst {cmd}: {err}"
        );
    }
}

/// `sst write` with a value size no memory holds is refused with its
/// limit, and leaves no file behind (it panicked with "capacity overflow"
/// and left an empty file).
#[test]
fn sst_write_refuses_an_impossible_value_size() {
    let root = tempfile::tempdir().unwrap();
    let sst = root.path().join("w.sst");
    let sst = sst.to_str().unwrap();
    for size in ["18446744073709551615", "1073741825"] {
        let (ok, out, err) = strata(&["sst", "write", sst, "--value-size", size]);
        assert!(!ok, "{out}");
        assert!(
            err.contains(&format!(
                "--value-size {size}: at most 1073741824 bytes (1 GiB)"
            )) && !err.contains("panicked"),
            "{err}"
        );
        assert!(!root.path().join("w.sst").exists());
    }
}

/// `sst verify` refuses a footer whose bytes differ from their encoding,
/// as every reader does: a flipped byte in the footer's padding (which no
/// field reads) fails it with the file and offset instead of printing OK.
#[test]
fn sst_verify_reports_a_damaged_footer_padding() {
    let root = tempfile::tempdir().unwrap();
    let sst = root.path().join("t.sst");
    let sst = sst.to_str().unwrap();
    let (ok, _, err) = strata(&["sst", "write", sst, "--keys", "100"]);
    assert!(ok, "{err}");
    let (ok, out, err) = strata(&["sst", "verify", sst]);
    assert!(ok && out.starts_with("OK "), "{out}{err}");
    let mut bytes = std::fs::read(sst).unwrap();
    // format_version 5: checksum byte, two handles, zero padding to 41
    // bytes, version, magic; byte 35 of the footer is padding.
    let at = bytes.len() - 53 + 35;
    assert_eq!(bytes[at], 0);
    bytes[at] ^= 0x10;
    std::fs::write(sst, &bytes).unwrap();
    let (ok, out, err) = strata(&["sst", "verify", sst]);
    assert!(!ok, "verify passed a damaged footer: {out}");
    assert!(
        err.contains(&format!(
            "corruption in {sst} at offset {at}: footer byte differs"
        )),
        "{err}"
    );
}

/// A batch-mode import into a new table that runs out of room fails, and
/// the table stays absent. The rows its committed batches wrote are
/// deleted again when the database can still write; when it cannot (the
/// deletion needs room too), the error says so and what becomes of them
/// (it used to show only the I/O error), and the next import that creates
/// a table deletes them.
#[test]
fn a_batch_import_that_runs_out_of_room_says_what_it_left() {
    use std::process::Command;
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let schema = d.path().join("s.sql");
    std::fs::write(&schema, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);").unwrap();
    let csv = d.path().join("t.csv");
    let value = "x".repeat(100);
    let rows: String = (0..30_000).map(|i| format!("{i},{value}\n")).collect();
    std::fs::write(&csv, rows).unwrap();
    // An existing database: one the import created is removed again on
    // failure, with all it held.
    let (ok, _, e) = strata(&["kv", "put", db.to_str().unwrap(), "k", "v"]);
    assert!(ok, "{e}");
    let args = |table: &str| {
        vec![
            "import".to_string(),
            db.to_str().unwrap().to_string(),
            "--schema".into(),
            schema.to_str().unwrap().to_string(),
            "--table".into(),
            table.to_string(),
            "--mode".into(),
            "batch".into(),
            csv.to_str().unwrap().to_string(),
        ]
    };
    let r = with_file_size_limit(
        Command::new(env!("CARGO_BIN_EXE_strata")).args(args("t")),
        1 << 20,
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(!r.status.success(), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(
        err.contains("deleting the rows this import had written into the new table t failed too"),
        "{err}"
    );
    let (ok, out, e) = strata(&["tables", db.to_str().unwrap()]);
    assert!(ok, "{e}");
    assert!(out.trim().is_empty(), "a table is listed: {out}");
    // The next import that creates a table deletes the rows left behind.
    let (ok, _, e) = strata(&args("t").iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{e}");
    let (ok, out, e) = strata(&["count", db.to_str().unwrap(), "t"]);
    assert!(ok, "{e}");
    assert_eq!(out.trim(), "30000");
}
