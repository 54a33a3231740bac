//! Compatibility with RocksDB 7.8, both ways, using RocksDB's own tools:
//! `sst_dump`, `ldb`, and the small C++ helper in tools/rocksdb-compat that
//! drives RocksDB's SstFileWriter, SstFileReader and IngestExternalFile.
//!
//! Needs `rocksdb-tools`, `librocksdb-dev` and `g++` (./test.sh installs
//! them). Without them each test prints how to install them and passes,
//! except under CI (`CI` set), where a missing tool is a failure.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use strata::iter::InternalIterator;
use strata::key::{ParsedKey, ValueKind};
use strata::sstable::{CompressionType, SstOptions, SstWriter, Table, TableOptions};
use strata::util::checksum::ChecksumType;
use strata::util::hex;

const INSTALL: &str = "apt-get install rocksdb-tools librocksdb-dev g++";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Path of the built compat helper, or None (with a message) if RocksDB's
/// tools are not installed.
fn compat() -> Option<&'static Path> {
    static TOOL: OnceLock<Option<PathBuf>> = OnceLock::new();
    TOOL.get_or_init(|| {
        let have = |c: &str| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {c}"))
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let missing: Vec<&str> = ["sst_dump", "ldb", "g++"]
            .into_iter()
            .filter(|c| !have(c))
            .collect();
        let why = if !missing.is_empty() {
            format!("{} not found", missing.join(", "))
        } else {
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("strata-rocksdb-compat");
            let r = Command::new("bash")
                .arg(repo().join("tools/rocksdb-compat/build.sh"))
                .arg(&out)
                .output();
            match r {
                Ok(o) if o.status.success() => return Some(out),
                Ok(o) => format!(
                    "building the compat helper failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => format!("running build.sh: {e}"),
            }
        };
        if std::env::var_os("CI").is_some() {
            panic!("RocksDB compatibility tools unavailable under CI: {why} (install: {INSTALL})");
        }
        eprintln!("SKIPPING RocksDB compatibility test: {why}; install with: {INSTALL}");
        None
    })
    .as_deref()
}

fn run(cmd: &mut Command) -> String {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn run_stdin(cmd: &mut Command, input: &str) -> String {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[derive(Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
}

/// Random binary keys (1..300 bytes), values (empty to 3 KB), some deletions.
fn random_ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let len = if rng.gen_bool(0.1) {
                rng.gen_range(200..300)
            } else {
                rng.gen_range(1..24)
            };
            (0..len)
                .map(|_| if rng.gen_bool(0.5) { rng.gen() } else { b'k' })
                .collect()
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            if rng.gen_bool(0.1) {
                Op::Del(k)
            } else {
                let len = [0, 1, 10, 100, 3000][rng.gen_range(0..5)];
                let v = (0..len)
                    .map(|i| {
                        if rng.gen_bool(0.3) {
                            rng.gen()
                        } else {
                            b'a' + (i % 20) as u8
                        }
                    })
                    .collect();
                Op::Put(k, v)
            }
        })
        .collect()
}

fn write_strata(path: &Path, ops: &[Op], tombstones: &[(Vec<u8>, Vec<u8>)], opts: SstOptions) {
    let mut w = SstWriter::create(path, opts).unwrap();
    for op in ops {
        match op {
            Op::Put(k, v) => w.put(k, v).unwrap(),
            Op::Del(k) => w.delete(k).unwrap(),
        }
    }
    for (a, b) in tombstones {
        w.delete_range(a, b).unwrap();
    }
    w.finish().unwrap();
}

/// `HEXKEY HEXVALUE` lines of the puts not covered by a tombstone: what a
/// RocksDB database holds after ingesting the file into an empty database.
fn visible_lines(ops: &[Op], tombstones: &[(Vec<u8>, Vec<u8>)]) -> Vec<String> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Put(k, v) if !tombstones.iter().any(|(a, b)| k >= a && k < b) => Some(
                format!("{} {}", hex::encode(k), hex::encode(v))
                    .trim_end()
                    .to_string(),
            ),
            _ => None,
        })
        .collect()
}

/// Compares line lists, reporting counts and the first difference instead
/// of dumping megabytes of hex.
fn assert_same(got: &[String], want: &[String], what: &str) {
    if got == want {
        return;
    }
    let i = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let cut = |s: Option<&String>| s.map(|s| s.chars().take(120).collect::<String>());
    panic!(
        "{what}: {} lines, expected {}; first difference at line {i}: got {:?}, expected {:?}",
        got.len(),
        want.len(),
        cut(got.get(i)),
        cut(want.get(i))
    );
}

fn lines(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

const COMPRESSIONS: [CompressionType; 4] = [
    CompressionType::None,
    CompressionType::Snappy,
    CompressionType::Lz4,
    CompressionType::Zstd,
];

#[test]
fn sst_dump_verifies_and_scans_strata_files_identically() {
    let Some(_) = compat() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let strata = env!("CARGO_BIN_EXE_strata");
    for (i, comp) in COMPRESSIONS.iter().enumerate() {
        for checksum in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
            let ops = random_ops(i as u64, 2000);
            let path = tmp.path().join(format!("{comp:?}-{checksum:?}.sst"));
            let opts = SstOptions {
                compression: *comp,
                checksum,
                block_size: 1024,
                ..SstOptions::for_ingestion()
            };
            write_strata(&path, &ops, &[], opts);
            let v = run(Command::new("sst_dump")
                .arg(format!("--file={}", path.display()))
                .arg("--command=verify")
                .arg("--verify_checksum"));
            let err = Command::new("sst_dump")
                .arg(format!("--file={}", path.display()))
                .arg("--command=verify")
                .arg("--verify_checksum")
                .output()
                .unwrap();
            assert!(v.contains("The file is ok"), "{comp:?}: {v}");
            assert!(
                !String::from_utf8_lossy(&err.stderr).contains("orrupt"),
                "{comp:?}: {}",
                String::from_utf8_lossy(&err.stderr)
            );
            let theirs = run(Command::new("sst_dump")
                .arg(format!("--file={}", path.display()))
                .arg("--command=scan")
                .arg("--output_hex")
                .arg("--verify_checksum"));
            let ours = run(Command::new(strata)
                .args(["sst", "dump", "--hex"])
                .arg(&path));
            let entry_lines = |s: &str| -> Vec<String> {
                s.lines()
                    .filter(|l| l.starts_with('\''))
                    .map(str::to_string)
                    .collect()
            };
            let (t, o) = (entry_lines(&theirs), entry_lines(&ours));
            assert_eq!(
                t.len(),
                ops.len(),
                "{comp:?}: sst_dump printed {} entries",
                t.len()
            );
            assert!(t == o, "{comp:?}: `strata sst dump --hex` differs from `sst_dump --command=scan --output_hex`");
        }
    }
}

#[test]
fn rocksdb_ingests_and_reads_strata_files() {
    let Some(compat) = compat() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for (i, comp) in COMPRESSIONS.iter().enumerate() {
        let ops = random_ops(100 + i as u64, 3000);
        let keys: Vec<&Vec<u8>> = ops
            .iter()
            .map(|o| match o {
                Op::Put(k, _) | Op::Del(k) => k,
            })
            .collect();
        let tombstones = vec![
            (keys[100].clone(), keys[150].clone()),
            (keys[2000].clone(), keys[2001].clone()),
        ];
        let path = tmp.path().join(format!("{comp:?}.sst"));
        let opts = SstOptions {
            compression: *comp,
            block_size: 2048,
            ..SstOptions::for_ingestion()
        };
        write_strata(&path, &ops, &[], opts.clone());
        // RocksDB's SstFileReader with checksum verification: every point
        // entry but deletions.
        let scanned = lines(&run(Command::new(compat).arg("scan").arg(&path)));
        assert_same(
            &scanned,
            &visible_lines(&ops, &[]),
            &format!("{comp:?}: SstFileReader scan"),
        );
        // Ingest into an empty database, then a second file holding only
        // range tombstones. (A tombstone deletes only older entries, so it
        // must come in a later file to delete anything.)
        let db = tmp.path().join(format!("db-{comp:?}"));
        let got = lines(&run(Command::new(compat).arg("ingest").arg(&db).arg(&path)));
        assert_same(
            &got,
            &visible_lines(&ops, &[]),
            &format!("{comp:?}: RocksDB after ingest"),
        );
        let tpath = tmp.path().join(format!("{comp:?}-tombstones.sst"));
        write_strata(&tpath, &[], &tombstones, opts);
        let got = lines(&run(Command::new(compat)
            .arg("ingest")
            .arg(&db)
            .arg(&tpath)));
        assert_same(
            &got,
            &visible_lines(&ops, &tombstones),
            &format!("{comp:?}: RocksDB after ingesting tombstones"),
        );
    }
    // ldb's ingestion, into a database that already holds overlapping data.
    let ops = random_ops(7, 500);
    let path = tmp.path().join("ldb.sst");
    write_strata(&path, &ops, &[], SstOptions::for_ingestion());
    let db = tmp.path().join("ldb-db");
    let (Op::Put(k0, _) | Op::Del(k0)) = &ops[0];
    run(Command::new("ldb")
        .arg(format!("--db={}", db.display()))
        .arg("--create_if_missing")
        .arg("--key_hex")
        .arg("--value_hex")
        .arg("put")
        .arg(hex::encode_rocksdb(k0))
        .arg("0x01"));
    // ldb reports on stderr; `run` checks the exit status.
    run(Command::new("ldb")
        .arg(format!("--db={}", db.display()))
        .arg("ingest_extern_sst")
        .arg(&path));
    let scan = run(Command::new("ldb")
        .arg(format!("--db={}", db.display()))
        .arg("scan")
        .arg("--hex"));
    let want: Vec<String> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Put(k, v) => Some(format!(
                "{} : {}",
                hex::encode_rocksdb(k),
                hex::encode_rocksdb(v)
            )),
            _ => None,
        })
        .collect();
    assert_same(&lines(&scan), &want, "ldb scan after ingest_extern_sst");
}

#[test]
fn strata_reads_files_rocksdb_writes() {
    let Some(compat) = compat() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for (i, comp) in ["none", "snappy", "lz4", "zstd"].iter().enumerate() {
        for (bloom, checksum) in [("0", "xxh3"), ("10", "crc32c")] {
            let ops = random_ops(200 + i as u64, 3000);
            let input: String = ops
                .iter()
                .map(|o| match o {
                    Op::Put(k, v) => format!("put {} {}\n", hex::encode(k), hex::encode(v)),
                    Op::Del(k) => format!("del {}\n", hex::encode(k)),
                })
                .collect();
            let path = tmp.path().join(format!("{comp}-{bloom}.sst"));
            run_stdin(
                Command::new(compat).arg("write").arg(&path).args([
                    "--compression",
                    comp,
                    "--bloom",
                    bloom,
                    "--checksum",
                    checksum,
                    "--block-size",
                    "1024",
                ]),
                &input,
            );
            let t = Table::open_path(&path, TableOptions::default()).unwrap();
            t.verify().unwrap();
            assert_eq!(t.has_filter(), bloom != "0");
            let mut it = t.iter();
            it.seek_to_first();
            for op in &ops {
                assert!(it.valid(), "{comp}: ran out of entries");
                let p = ParsedKey::parse(it.key()).unwrap();
                match op {
                    Op::Put(k, v) => assert_eq!(
                        (p.user_key, p.value_kind(), it.value()),
                        (k.as_slice(), Some(ValueKind::Value), v.as_slice())
                    ),
                    Op::Del(k) => assert_eq!(
                        (p.user_key, p.value_kind()),
                        (k.as_slice(), Some(ValueKind::Deletion))
                    ),
                }
                it.next();
            }
            assert!(!it.valid());
            for op in ops.iter().step_by(7) {
                if let Op::Put(k, v) = op {
                    assert_eq!(&t.get(k, u64::MAX).unwrap().unwrap().value, v);
                }
            }
        }
    }
}

/// `strata dump` output loads into RocksDB with `ldb load`, and `ldb dump`
/// output loads into Strata with `strata kv load`: the same entries both ways.
#[test]
fn data_moves_between_rocksdb_and_strata_with_ldb_lines() {
    let Some(_) = compat() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let strata = env!("CARGO_BIN_EXE_strata");
    let src = tmp.path().join("strata-src");
    let input = tmp.path().join("in.txt");
    let ops = random_ops(300, 2000);
    let text: String = ops
        .iter()
        .filter_map(|o| match o {
            Op::Put(k, v) => Some(format!(
                "{} ==> {}\n",
                hex::encode_rocksdb(k),
                hex::encode_rocksdb(v)
            )),
            Op::Del(_) => None,
        })
        .collect();
    std::fs::write(&input, &text).unwrap();
    run(Command::new(strata)
        .args(["kv", "load", "--hex"])
        .arg(&src)
        .arg(&input));
    let dumped = run(Command::new(strata).args(["kv", "dump", "--hex"]).arg(&src));
    assert_eq!(dumped, text, "strata kv load/dump round trip");

    // Strata -> RocksDB.
    let rdb = tmp.path().join("rocksdb");
    let dump_file = tmp.path().join("strata-dump.txt");
    std::fs::write(&dump_file, &dumped).unwrap();
    run(Command::new("ldb")
        .arg(format!("--db={}", rdb.display()))
        .args(["--create_if_missing", "--hex", "load"])
        .stdin(std::fs::File::open(&dump_file).unwrap()));
    let rdump = run(Command::new("ldb")
        .arg(format!("--db={}", rdb.display()))
        .args(["--hex", "dump"]));
    let entries = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains(" ==> "))
            .map(str::to_string)
            .collect()
    };
    assert_same(
        &entries(&rdump),
        &entries(&text),
        "ldb dump after loading strata's dump",
    );

    // RocksDB -> Strata.
    let back = tmp.path().join("strata-back");
    let rfile = tmp.path().join("rocksdb-dump.txt");
    std::fs::write(&rfile, entries(&rdump).join("\n") + "\n").unwrap();
    run(Command::new(strata)
        .args(["kv", "load", "--hex"])
        .arg(&back)
        .arg(&rfile));
    let again = run(Command::new(strata)
        .args(["kv", "dump", "--hex"])
        .arg(&back));
    assert_eq!(again, text, "strata after loading ldb's dump");
}
