//! The table commands of the `strata` binary: `import` (dialect options,
//! header matching, several files, JSON summary, bad rows), then `get`,
//! `scan` (primary and index, bounds, limit), `count` and `tables`.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;
use common::strata;
use std::path::Path;

/// The summary's memory budget: the default (a quarter of the machine's
/// memory) is called a ceiling, so beside a tiny import it does not read as
/// what was used; a budget given with `--memory` is printed as given.
#[test]
fn the_default_memory_budget_is_called_a_ceiling() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("s.sql"), "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);").unwrap();
    std::fs::write(p("t.tsv"), "1\ta\n2\tb\n").unwrap();
    let import = |db: &str, extra: &[&str]| {
        let (schema, t) = (p("s.sql"), p("t.tsv"));
        let mut args = vec!["import", db, "--schema", &schema];
        args.extend_from_slice(&["--table", "t", "--format", "tsv"]);
        args.extend_from_slice(extra);
        args.push(&t);
        let (ok, out, err) = strata(&args);
        assert!(ok, "{err}");
        out.lines()
            .find(|l| l.starts_with("memory budget"))
            .unwrap_or_else(|| panic!("no budget line: {out}"))
            .to_string()
    };
    let line = import(&p("a"), &[]);
    assert!(
        line.contains(
            "(the default ceiling, a quarter of this machine's memory; --memory sets it)"
        ),
        "{line}"
    );
    let line = import(&p("b"), &["--memory", "64MiB"]);
    assert!(
        line.starts_with("memory budget 67.1 MB:") && !line.contains("default"),
        "{line}"
    );
}

#[test]
fn import_then_read_back() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(
        p("schema.sql"),
        "CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL, price DECIMAL(8,2));
         CREATE INDEX item_name ON item (name);
         CREATE TABLE other (x TEXT);",
    )
    .unwrap();
    // Columns in another order than the table's, a quoted field with the
    // delimiter and a newline, CRLF, a NULL.
    std::fs::write(p("a.csv"), "price;id;name\r\n1.5;3;'c;\nx'\r\n\\N;1;a\r\n").unwrap();
    std::fs::write(p("b.csv"), "price;id;name\n2;2;b\n").unwrap();
    let db = p("db");
    let (ok, out, err) = strata(&[
        "import",
        &db,
        &p("*.csv"),
        "--schema",
        &p("schema.sql"),
        "--table",
        "item",
        "--delimiter",
        ";",
        "--quote",
        "'",
        "--null",
        "\\N",
        "--header",
        "match",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"], 3);
    assert_eq!(v["indexes"][0]["kvs"], 3);
    assert_eq!(v["indexes"][1]["name"], "item_name");
    // Three rows are applied as a write batch: no file, nothing to amplify.
    assert_eq!(v["batch_units"], 1);
    assert!(v["write_amplification"].is_null(), "{out}");

    assert_eq!(strata(&["get", &db, "item", "3"]).1, "3,\"c;\nx\",1.50\n");
    assert_eq!(strata(&["get", &db, "item", "1"]).1, "1,a,\\N\n");
    let (ok, _, err) = strata(&["get", &db, "item", "9"]);
    assert!(!ok && err.contains("no row with key 9"), "{err}");
    assert_eq!(
        strata(&["scan", &db, "item"]).1,
        "1,a,\\N\n2,b,2.00\n3,\"c;\nx\",1.50\n"
    );
    assert_eq!(
        strata(&[
            "scan",
            &db,
            "item",
            "--index",
            "item_name",
            "--from",
            "b",
            "--to",
            "c;\nx"
        ])
        .1,
        "2,b,2.00\n3,\"c;\nx\",1.50\n"
    );
    assert_eq!(
        strata(&["scan", &db, "item", "--limit", "1"]).1,
        "1,a,\\N\n"
    );
    assert_eq!(strata(&["count", &db, "item"]).1, "3\n");
    let (ok, tables, err) = strata(&["tables", &db]);
    assert!(ok, "{err}");
    assert!(tables.contains("item (id 1): 3 rows"), "{tables}");
    assert!(
        tables.contains("index item_name (name): 3 entries"),
        "{tables}"
    );

    // A bad row: file, line, column; the table is unchanged.
    std::fs::write(p("bad.tsv"), "4\td\t1\n5\te\tx\n").unwrap();
    let (ok, _, err) = strata(&[
        "import",
        &db,
        &p("bad.tsv"),
        "--schema",
        &p("schema.sql"),
        "--table",
        "item",
        "--format",
        "tsv",
        "--quiet",
    ]);
    assert!(!ok);
    assert!(err.contains("bad.tsv:2: column price"), "{err}");
    assert_eq!(strata(&["count", &db, "item"]).1, "3\n");
    // Reading a table that does not exist is an error, and creates nothing.
    let (ok, _, err) = strata(&["count", &db, "nope"]);
    assert!(
        !ok && err.contains("no table nope (the tables are: item)"),
        "{err}"
    );
    let (ok, _, _) = strata(&["tables", &p("missing")]);
    assert!(!ok && !d.path().join("missing").exists());
}

#[test]
fn demo_tells_the_story() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("demo");
    let (ok, out, err) = strata(&[
        "demo",
        "--dir",
        dir.to_str().unwrap(),
        "--random",
        "--memory",
        "16MiB",
    ]);
    assert!(ok, "{err}\n{out}");
    assert!(out.contains("imported 100000 rows into stock"), "{out}");
    // The command it says it runs carries the budget it runs with.
    assert!(out.contains("--table stock --memory 16MiB)"), "{out}");
    assert!(
        out.contains("by primary key (s_w_id=1, s_i_id=42):\n     42,1,"),
        "{out}"
    );
    assert!(out.contains("count: 100000 rows"), "{out}");
    assert!(out.contains("ingestions 1"), "{out}");
    // Random order under 16 MiB: the sort spilled, and the rows are all there.
    let db = dir.join("db");
    let (_, json, _) = strata(&["count", db.to_str().unwrap(), "stock"]);
    assert_eq!(json, "100000\n");
    assert!(dir.join(".strata-demo").exists());
}

/// The demo deletes DIR/db and overwrites its files, so it refuses a
/// directory it did not make that holds anything, and changes nothing
/// there.
#[test]
fn demo_refuses_a_directory_it_did_not_make() {
    let d = tempfile::tempdir().unwrap();
    for held in ["db/CURRENT", "notes.txt"] {
        let dir = d.path().join(held.replace('/', "-"));
        let file = dir.join(held);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "mine").unwrap();
        let (ok, out, err) = strata(&["demo", "--dir", dir.to_str().unwrap()]);
        assert!(!ok, "{out}");
        assert!(
            err.contains("was not made by strata demo") && err.contains("choose another --dir"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "{held}");
    }
}

#[test]
fn import_reads_standard_input() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let schema = d.path().join("s.sql");
    std::fs::write(&schema, "CREATE TABLE kv (k TEXT, v INT)").unwrap();
    let db = d.path().join("db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "import",
            db.to_str().unwrap(),
            "-",
            "--schema",
            schema.to_str().unwrap(),
        ])
        .args(["--table", "kv", "--format", "tsv", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"b\t2\na\t\\N\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    // No primary key: rows keep input order under the hidden row id.
    assert_eq!(
        strata(&["scan", db.to_str().unwrap(), "kv"]).1,
        "b,2\na,\\N\n"
    );
    let (_, tables, _) = strata(&["tables", db.to_str().unwrap()]);
    assert!(tables.contains("hidden row id"), "{tables}");
}

#[test]
fn on_duplicate_ignore_skips_taken_keys() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("s.sql"), "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)").unwrap();
    std::fs::write(p("a.csv"), "1,a\n2,b\n").unwrap();
    std::fs::write(p("b.csv"), "2,changed\n3,c\n3,again\n").unwrap();
    let db = p("db");
    let schema = p("s.sql");
    let import = |file: &str, extra: &[&str]| {
        let mut args = vec!["import", &db, file, "--schema", &schema, "--table", "t"];
        args.extend_from_slice(extra);
        strata(&args)
    };
    assert!(import(&p("a.csv"), &["--quiet"]).0);
    let (ok, _, err) = import(&p("b.csv"), &["--quiet"]);
    assert!(
        !ok && err.contains("duplicate key") && err.contains("b.csv:"),
        "{err}"
    );
    let (ok, out, err) = import(&p("b.csv"), &["--on-duplicate", "ignore", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["rows"].as_u64(), v["duplicates_ignored"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(strata(&["scan", &db, "t"]).1, "1,a\n2,b\n3,c\n");
}

/// `--on-duplicate replace` through the CLI in every `--mode`: the last
/// row wins, the index follows it, and `--help` states each mode's
/// atomicity.
#[test]
fn on_duplicate_replace_in_every_mode() {
    let (ok, help, _) = strata(&["import", "--help"]);
    assert!(ok && help.contains("NOT all or nothing"), "{help}");
    for mode in ["pipeline", "direct", "batch"] {
        let d = tempfile::tempdir().unwrap();
        let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
        std::fs::write(
            p("s.sql"),
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v);",
        )
        .unwrap();
        std::fs::write(p("a.csv"), "1,a\n2,b\n").unwrap();
        std::fs::write(p("b.csv"), "2,changed\n3,c\n3,again\n").unwrap();
        let db = p("db");
        let schema = p("s.sql");
        let import = |file: &str| {
            strata(&[
                "import",
                &db,
                file,
                "--schema",
                &schema,
                "--table",
                "t",
                "--mode",
                mode,
                "--rows-per-batch",
                "1",
                "--on-duplicate",
                "replace",
                "--json",
            ])
        };
        assert!(import(&p("a.csv")).0, "{mode}");
        let (ok, out, err) = import(&p("b.csv"));
        assert!(ok, "{mode}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        // One new key; which rows count as replaced depends on the units
        // (1-row batches: `3,again` replaces the `3,c` already written).
        let (rows, replaced) = (v["rows"].as_u64().unwrap(), v["replaced"].as_u64().unwrap());
        assert!(replaced >= 1 && rows - replaced == 1, "{mode}: {out}");
        assert_eq!(strata(&["scan", &db, "t"]).1, "1,a\n2,changed\n3,again\n");
        assert_eq!(
            strata(&["scan", &db, "t", "--index", "t_v"]).1,
            "1,a\n3,again\n2,changed\n",
            "{mode}"
        );
    }
}

/// Refused inputs leave the file system as it was and say what is wrong:
/// a failed `import`, `ingest` or `ingest-table` into a new path removes
/// the database it created (an existing one keeps its rows); colliding
/// dialect bytes (an escape equal to the delimiter silently dropped the
/// delimiter from quoted fields) and a key naming a column twice are
/// refused before anything is opened; an existing table's different
/// definition is named column by column; negative key values are values,
/// not options.
#[test]
fn refused_inputs_change_nothing_and_say_why() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(
        p("t.sql"),
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10));",
    )
    .unwrap();
    std::fs::write(p("good.csv"), "-5,a\n1,\"b,c\"\n").unwrap();
    std::fs::write(p("bad.csv"), "2,a\nx,b\n").unwrap();
    std::fs::write(p("junk.sst"), "not a table").unwrap();
    let schema = p("t.sql");
    let import = |db: &str, file: &str, extra: &[&str]| {
        let mut args = vec!["import", db, "--schema", &schema, "--table", "t", file];
        args.extend_from_slice(extra);
        strata(&args)
    };
    for (file, want) in [("bad.csv", "bad.csv:2"), ("missing.csv", "missing.csv")] {
        let (ok, _, err) = import(&p("new"), &p(file), &[]);
        assert!(!ok && err.contains(want), "{file}: {err}");
        assert!(
            !d.path().join("new").exists(),
            "{file}: the failed import left a database"
        );
    }
    // A file named twice (directly, or by a name and a pattern) is refused
    // before anything is read: each row would collide with itself.
    for second in [p("good.csv"), p("go*.csv")] {
        let (ok, _, err) = import(&p("new"), &p("good.csv"), &[&second]);
        assert!(
            !ok && err.contains("good.csv is named twice; to load a file twice, run two imports"),
            "{second}: {err}"
        );
        assert!(!d.path().join("new").exists());
    }
    // Past --max-bad-rows the error says the limit was passed.
    std::fs::write(
        p("two-bad.csv"),
        "1,a
x,b
y,c
",
    )
    .unwrap();
    let (ok, _, err) = import(&p("new"), &p("two-bad.csv"), &["--max-bad-rows", "1"]);
    assert!(
        !ok && err.contains("two-bad.csv:3: column id")
            && err.contains("(bad row 2: more than --max-bad-rows 1 allows)"),
        "{err}"
    );
    assert!(!d.path().join("new").exists());
    let (ok, _, err) = strata(&["ingest", &p("new"), &p("junk.sst")]);
    assert!(!ok, "{err}");
    assert!(
        !d.path().join("new").exists(),
        "the failed ingest left a database"
    );
    let (ok, _, err) = strata(&["ingest-table", &p("new"), &p("no-bundle")]);
    assert!(!ok, "{err}");
    assert!(
        !d.path().join("new").exists(),
        "the failed ingest-table left a database"
    );

    let (ok, _, err) = import(&p("db"), &p("good.csv"), &[]);
    assert!(ok, "{err}");
    let (ok, _, err) = import(&p("db"), &p("bad.csv"), &[]);
    assert!(!ok && err.contains("bad.csv:2"), "{err}");
    assert_eq!(
        strata(&["count", &p("db"), "t"]).1.trim(),
        "2",
        "an existing database keeps its rows"
    );

    for (flag, byte, want) in [("--escape", ",", "escape"), ("--quote", ",", "quote")] {
        let (ok, _, err) = import(&p("new"), &p("good.csv"), &[flag, byte]);
        assert!(
            !ok && err.contains(want) && err.contains("delimiter"),
            "{flag}: {err}"
        );
        assert!(!d.path().join("new").exists(), "{flag}: created a database");
    }
    std::fs::write(
        p("twice.sql"),
        "CREATE TABLE t (id INT, PRIMARY KEY (id, id));",
    )
    .unwrap();
    let (ok, _, err) = strata(&[
        "import",
        &p("new"),
        "--schema",
        &p("twice.sql"),
        "--table",
        "t",
        &p("good.csv"),
    ]);
    assert!(!ok && err.contains("names column id twice"), "{err}");

    std::fs::write(
        p("wider.sql"),
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));",
    )
    .unwrap();
    let (ok, _, err) = strata(&[
        "import",
        &p("db"),
        "--schema",
        &p("wider.sql"),
        "--table",
        "t",
        &p("good.csv"),
    ]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("column 2 is v VARCHAR(10) in the table, v VARCHAR(20) in the schema"),
        "{err}"
    );

    let (ok, out, err) = strata(&["get", &p("db"), "t", "-5"]);
    assert!(ok && out.trim() == "-5,a", "{out}{err}");
    let (ok, out, err) = strata(&["scan", &p("db"), "t", "--from", "-10", "--to", "0"]);
    assert!(ok && out.trim() == "-5,a", "{out}{err}");
}

/// A failed `import`, `ingest` or `ingest-table` into an existing empty
/// directory removes the database it created there, as it does for a
/// missing path, and says so; the directory stays, empty. (It used to
/// leave `CURRENT`, `MANIFEST-000002`, `000003.log`, `EVENTS`, `LOCK` and
/// `scratch/` behind.) A directory that holds something else is refused
/// and keeps it.
#[test]
fn a_failed_command_into_an_empty_directory_leaves_it_empty() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(
        p("s.sql"),
        "CREATE TABLE item (id INT PRIMARY KEY, price DECIMAL(5,2));",
    )
    .unwrap();
    std::fs::write(p("bad.csv"), "1,2.50\n2,not-a-number\n").unwrap();
    std::fs::write(p("garbage.sst"), "not a table file").unwrap();
    std::fs::create_dir(p("bundle")).unwrap();
    std::fs::write(p("bundle/strata-bundle.json"), "{ not json").unwrap();
    let listing = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let (schema, bad, garbage, bundle) = (p("s.sql"), p("bad.csv"), p("garbage.sst"), p("bundle"));
    let commands: [(&str, Vec<&str>, &str); 3] = [
        (
            "import",
            vec!["--schema", &schema, "--table", "item", &bad],
            "bad.csv:2",
        ),
        ("ingest", vec![&garbage], "garbage.sst"),
        ("ingest-table", vec![&bundle], "strata-bundle.json"),
    ];
    for (cmd, rest, names) in &commands {
        let dir = p(&format!("empty-{cmd}"));
        std::fs::create_dir(&dir).unwrap();
        let mut args = vec![*cmd, dir.as_str()];
        args.extend_from_slice(rest);
        let (ok, _, err) = strata(&args);
        assert!(!ok && err.contains(names), "{cmd}: {err}");
        assert!(
            err.contains(&format!(
                "(the database this command created in the empty directory {dir} was \
                 removed again, with all it held; the directory stays, empty)"
            )),
            "{cmd}: {err}"
        );
        assert!(
            listing(&dir).is_empty(),
            "{cmd}: the failed command left {:?} in the empty directory",
            listing(&dir)
        );
        // Not empty: a directory holding someone else's file is no place
        // for a new database (the open refuses it), and the file stays.
        let other = p(&format!("other-{cmd}"));
        std::fs::create_dir(&other).unwrap();
        std::fs::write(format!("{other}/notes.txt"), "mine").unwrap();
        let mut args = vec![*cmd, other.as_str()];
        args.extend_from_slice(rest);
        let (ok, _, err) = strata(&args);
        assert!(!ok && !err.contains("removed again"), "{cmd}: {err}");
        assert!(listing(&other).contains(&"notes.txt".to_string()), "{cmd}");
    }
}

/// `strata tables` on a database without tables says so (on standard
/// error, as `count` does, so standard output stays empty) and exits 0; it
/// used to print nothing at all.
#[test]
fn tables_says_when_there_is_no_table() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let db = db.to_str().unwrap();
    let (ok, _, err) = strata(&["kv", "put", db, "k", "v"]);
    assert!(ok, "{err}");
    let (ok, out, err) = strata(&["tables", db]);
    assert!(ok, "{err}");
    assert_eq!(out, "", "{out}");
    assert_eq!(err.trim(), "this database holds no imported table");
    let (ok, _, err) = strata(&["count", db, "t"]);
    assert!(
        !ok && err.contains("(this database holds no imported table)"),
        "{err}"
    );
}

/// `--rejects` never destroys what it must not: a rejects path that is an
/// input, or inside the database directory, is refused before anything is
/// read (one overwrote the input and imported 0 rows, the other emptied
/// CURRENT); and the file is created only when a bad row arrives, so an
/// import without bad rows creates nothing.
#[test]
fn the_rejects_file_never_overwrites_an_input_or_the_database() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("t.sql"), "CREATE TABLE t (id INT PRIMARY KEY, v INT);").unwrap();
    std::fs::write(p("in.csv"), "1,10\n2,20\n3,x\n").unwrap();
    std::fs::write(p("ok.csv"), "4,40\n").unwrap();
    let import = |db: &str, rejects: &str, file: &str| {
        strata(&[
            "import",
            db,
            "--schema",
            &p("t.sql"),
            "--table",
            "t",
            "--max-bad-rows",
            "1",
            "--rejects",
            rejects,
            file,
        ])
    };
    let (ok, _, err) = import(&p("db"), &p("in.csv"), &p("in.csv"));
    assert!(!ok && err.contains("is also an input"), "{err}");
    assert_eq!(
        std::fs::read_to_string(p("in.csv")).unwrap(),
        "1,10\n2,20\n3,x\n"
    );
    let (ok, _, err) = import(&p("db"), &p("ok.csv"), &p("ok.csv"));
    assert!(!ok && err.contains("is also an input"), "{err}");

    let (ok, _, err) = import(&p("db"), &p("rej.csv"), &p("ok.csv"));
    assert!(ok, "{err}");
    let (ok, _, err) = import(&p("db"), &p("db/CURRENT"), &p("in.csv"));
    assert!(
        !ok && err.contains("inside the database directory"),
        "{err}"
    );
    assert_eq!(
        strata(&["count", &p("db"), "t"]).1.trim(),
        "1",
        "the database is intact"
    );

    // Nor the schema file (it was overwritten with the bad records).
    let (ok, _, err) = strata(&[
        "import",
        &p("db"),
        "--schema",
        &p("t.sql"),
        "--table",
        "t",
        "--max-bad-rows",
        "1",
        "--rejects",
        &p("t.sql"),
        &p("in.csv"),
    ]);
    assert!(!ok && err.contains("is the schema file"), "{err}");
    assert_eq!(
        std::fs::read_to_string(p("t.sql")).unwrap(),
        "CREATE TABLE t (id INT PRIMARY KEY, v INT);"
    );

    assert!(
        !Path::new(&p("rej.csv")).exists(),
        "no bad row: no rejects file"
    );
    let (ok, _, err) = import(&p("db"), &p("rej.csv"), &p("in.csv"));
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(p("rej.csv")).unwrap(), "3,x\n");
    assert_eq!(strata(&["count", &p("db"), "t"]).1.trim(), "3");
}

/// `--rejects FILE` never overwrites an existing FILE (nor FILE.reasons):
/// the import is refused before anything is read, with an error naming the
/// file, and the file and the table are as they were (it used to truncate
/// the file when the first bad row arrived). Without bad rows too: whether
/// one arrives is known only after the file would have been needed.
#[test]
fn the_rejects_file_must_not_exist() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("t.sql"), "CREATE TABLE t (id INT PRIMARY KEY, v INT);").unwrap();
    std::fs::write(p("in.csv"), "1,10\n2,20\n3,x\n").unwrap();
    std::fs::write(p("ok.csv"), "4,40\n").unwrap();
    let import = |rejects: &str, file: &str| {
        strata(&[
            "import",
            &p("db"),
            "--schema",
            &p("t.sql"),
            "--table",
            "t",
            "--max-bad-rows",
            "1",
            "--rejects",
            rejects,
            file,
        ])
    };
    std::fs::write(p("keep.txt"), "mine").unwrap();
    for file in ["in.csv", "ok.csv"] {
        let (ok, _, err) = import(&p("keep.txt"), &p(file));
        assert!(
            !ok && err.contains(&format!(
                "the rejects file {} already exists",
                p("keep.txt")
            )),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(p("keep.txt")).unwrap(), "mine");
        assert!(!Path::new(&p("keep.txt.reasons")).exists());
        assert!(!Path::new(&p("db")).exists(), "nothing was imported");
    }
    // Only the reasons file is there: refused too, and kept.
    std::fs::write(p("rej.csv.reasons"), "old reasons").unwrap();
    let (ok, _, err) = import(&p("rej.csv"), &p("in.csv"));
    assert!(
        !ok && err.contains(&format!(
            "the rejects file {} already exists",
            p("rej.csv.reasons")
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(p("rej.csv.reasons")).unwrap(),
        "old reasons"
    );
    assert!(!Path::new(&p("rej.csv")).exists());
    // A new path works, and a second run onto it is refused.
    let (ok, _, err) = import(&p("new.csv"), &p("in.csv"));
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(p("new.csv")).unwrap(), "3,x\n");
    let (ok, _, err) = import(&p("new.csv"), &p("ok.csv"));
    assert!(!ok && err.contains("already exists"), "{err}");
    assert_eq!(strata(&["count", &p("db"), "t"]).1.trim(), "2");
}

/// The summary says where bad rows went (the `--rejects` file, or nowhere
/// without one) and, when a small import went in as a write batch and the
/// tree holds no file yet, says so instead of ending in an empty list.
#[test]
fn the_summary_says_where_bad_rows_and_rows_went() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("t.sql"), "CREATE TABLE t (id INT PRIMARY KEY, v INT);").unwrap();
    std::fs::write(p("in.csv"), "1,10\n2,x\n3,30\n").unwrap();
    let (schema, input) = (p("t.sql"), p("in.csv"));
    let import = |db: &str, extra: &[&str]| {
        let mut args = vec![
            "import",
            db,
            "--schema",
            &schema,
            "--table",
            "t",
            "--max-bad-rows",
            "1",
        ];
        args.extend_from_slice(extra);
        args.push(&input);
        let (ok, out, err) = strata(&args);
        assert!(ok, "{err}");
        out
    };
    let out = import(&p("db1"), &[]);
    assert!(
        out.contains("rejected 1 bad rows (not kept: --rejects FILE keeps them"),
        "{out}"
    );
    assert!(
        out.contains("the tree now holds no table files (the rows are in the write-ahead log"),
        "{out}"
    );
    let rejects = p("rej.csv");
    let out = import(&p("db2"), &["--rejects", &rejects]);
    assert!(
        out.contains(&format!(
            "rejected 1 bad rows: the records are in {rejects}, the reasons in {rejects}.reasons"
        )),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&rejects).unwrap(), "2,x\n");
}

/// A row that does not decode under the table's definition (raw keys
/// written over the table's key space) is an error naming the row's key,
/// from `get` and from `scan`.
#[test]
fn a_row_that_does_not_decode_is_named_by_its_key() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("t.sql"), "CREATE TABLE t (id INT PRIMARY KEY, v INT);").unwrap();
    std::fs::write(p("in.csv"), "1,10\n2,20\n").unwrap();
    let db = p("db");
    let (ok, _, err) = strata(&[
        "import",
        &db,
        "--schema",
        &p("t.sql"),
        "--table",
        "t",
        "--quiet",
        &p("in.csv"),
    ]);
    assert!(ok, "{err}");
    // Table 1, primary index 0, the INT 9 (tag 1, sign-flipped i64).
    let key = "\\x01\\x00\\x00\\x00\\x01\\x00\\x00\\x01\\x80\\x00\\x00\\x00\\x00\\x00\\x00\\x09";
    let (ok, _, err) = strata(&["kv", "put", &db, key, "not a row"]);
    assert!(ok, "{err}");
    let (ok, _, err) = strata(&["get", &db, "t", "9"]);
    assert!(
        !ok && err.contains("table t: the row with primary key (9) does not decode"),
        "{err}"
    );
    let (ok, out, err) = strata(&["scan", &db, "t"]);
    assert_eq!(out, "1,10\n2,20\n");
    assert!(
        !ok && err.contains("table t: the row with primary key (9) does not decode"),
        "{err}"
    );
}

/// A schema file without the table names the tables it has, and one with
/// no table at all says so (it printed an empty list).
#[test]
fn a_schema_without_the_table_says_what_it_holds() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(
        p("two.sql"),
        "CREATE TABLE a (x INT); CREATE TABLE b (y INT);",
    )
    .unwrap();
    std::fs::write(p("empty.sql"), "-- nothing yet\n").unwrap();
    std::fs::write(p("in.csv"), "1\n").unwrap();
    let run = |schema: &str| {
        strata(&[
            "import",
            &p("db"),
            "--schema",
            &p(schema),
            "--table",
            "c",
            &p("in.csv"),
        ])
    };
    let (ok, _, err) = run("two.sql");
    assert!(
        !ok && err.contains("defines no table c (it defines: a, b)"),
        "{err}"
    );
    let (ok, _, err) = run("empty.sql");
    assert!(
        !ok && err.contains("empty.sql: schema: the schema is empty: it declares no table"),
        "{err}"
    );
    assert!(!d.path().join("db").exists());
}

/// A budget below 1 MiB (which the summary then reported as kept while
/// its chunks alone broke it) and zero rows per batch (read as 1) are
/// refused before anything is created.
#[test]
fn meaningless_sizes_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let schema = d.path().join("s.sql");
    std::fs::write(&schema, "CREATE TABLE kv (k TEXT PRIMARY KEY, v INT)").unwrap();
    let csv = d.path().join("in.csv");
    std::fs::write(&csv, "a,1\nb,2\n").unwrap();
    let db = d.path().join("db");
    let base = [
        "import",
        db.to_str().unwrap(),
        csv.to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
        "--table",
        "kv",
        "--quiet",
    ];
    for (extra, want) in [
        (
            &["--memory", "0"][..],
            "--memory 0: an import needs at least 1 MiB",
        ),
        (
            &["--memory", "1KiB"][..],
            "--memory 1KiB: an import needs at least 1 MiB",
        ),
        (
            &["--mode", "batch", "--rows-per-batch", "0"][..],
            "--rows-per-batch must be at least 1",
        ),
        (
            &["--memory", "lots"][..],
            "\"lots\" is not a size: it must start with a number",
        ),
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let (ok, out, err) = strata(&args);
        assert!(!ok && err.contains(want), "{extra:?}: {out}{err}");
        assert!(!db.exists(), "{extra:?} created the database");
    }
    let (ok, _, err) = strata(&base);
    assert!(ok, "{err}");
    // The demo refuses a budget as the import it says it runs does,
    // before it writes anything; `kv load` a memtable no size fits.
    let demo = d.path().join("demo");
    let (ok, out, err) = strata(&["demo", "--dir", demo.to_str().unwrap(), "--memory", "1KiB"]);
    assert!(
        !ok && err.contains("--memory 1KiB: an import needs at least 1 MiB"),
        "{out}{err}"
    );
    assert!(!demo.exists());
    for mib in ["0", "100000000"] {
        let kv = d.path().join("kv");
        let (ok, out, err) = strata(&[
            "kv",
            "load",
            kv.to_str().unwrap(),
            csv.to_str().unwrap(),
            "--memtable-mib",
            mib,
        ]);
        assert!(
            !ok && err.contains(&format!("--memtable-mib {mib}: must be from 1 to 4096")),
            "{out}{err}"
        );
        assert!(!kv.exists());
    }
}

/// A 1-row import's summary says the row was applied as a write batch
/// and counts no files (it printed "files 1, sst bytes 1824" for a row
/// the database applied as a batch); `--json` says the same.
#[test]
fn a_small_import_says_it_was_applied_as_a_batch() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(
        p("s.sql"),
        "CREATE TABLE t (id INT PRIMARY KEY, name TEXT);",
    )
    .unwrap();
    std::fs::write(p("r.csv"), "1,a\n").unwrap();
    let args = |db: &str| {
        vec![
            "import".to_string(),
            p(db),
            "--schema".to_string(),
            p("s.sql"),
            "--table".to_string(),
            "t".to_string(),
            p("r.csv"),
        ]
    };
    let a = args("db");
    let (ok, out, err) = strata(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{err}");
    let primary = out
        .lines()
        .find(|l| l.starts_with("primary"))
        .unwrap_or_else(|| panic!("no primary row:\n{out}"));
    let cols: Vec<&str> = primary.split_whitespace().collect();
    assert_eq!(cols[1..4], ["1", "0", "0"], "kvs, files, sst bytes: {out}");
    assert!(out.contains("applied as a write batch;"), "{out}");
    assert!(
        out.contains("write amplification - (no table files ingested)"),
        "{out}"
    );

    let mut a = args("db2");
    a.push("--json".to_string());
    let (ok, out, err) = strata(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["batch_units"].as_u64(), Some(1), "{out}");
    assert_eq!(v["indexes"][0]["files"].as_u64(), Some(0), "{out}");
    assert_eq!(v["indexes"][0]["sst_bytes"].as_u64(), Some(0), "{out}");
    assert!(v["write_amplification"].is_null(), "{out}");
}

/// `--escape` equal to the quote byte is the default (a doubled quote is
/// one quote, as PostgreSQL's `ESCAPE` defaulting to `QUOTE`): it turned
/// `"a""b"` into `a"b"` and split `"say ""hi"", ok"` at its comma. A
/// different escape byte escapes the quote (`\"`).
#[test]
fn an_escape_equal_to_the_quote_is_the_default() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("s.sql"), "CREATE TABLE t (a INT PRIMARY KEY, b TEXT);").unwrap();
    std::fs::write(p("q.csv"), "1,\"a\"\"b\"\n2,\"say \"\"hi\"\", ok\"\n").unwrap();
    std::fs::write(p("e.csv"), "1,\"a\\\"b\"\n2,\"say \\\"hi\\\", ok\"\n").unwrap();
    let want = "1,\"a\"\"b\"\n2,\"say \"\"hi\"\", ok\"\n";
    for (db, file, extra) in [
        ("d0", "q.csv", vec![]),
        ("d1", "q.csv", vec!["--escape", "\""]),
        ("d2", "e.csv", vec!["--escape", "\\"]),
        ("d3", "q.csv", vec!["--quote", "\"", "--escape", "\""]),
    ] {
        let (schema, f) = (p("s.sql"), p(file));
        let mut args = vec!["import", db, "--schema", &schema, "--table", "t"];
        let db = p(db);
        args[1] = &db;
        args.extend_from_slice(&extra);
        args.push(&f);
        let (ok, _, err) = strata(&args);
        assert!(ok, "{extra:?}: {err}");
        let (ok, out, err) = strata(&["scan", &db, "t"]);
        assert!(ok, "{err}");
        assert_eq!(out, want, "{extra:?}");
    }
}

/// A CR-only file's header ends at its first CR (it took the whole file:
/// `--header skip` imported nothing), and its rows' lines count CRs.
#[test]
fn a_cr_only_file_has_a_header_and_lines() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("s.sql"), "CREATE TABLE t (a INT PRIMARY KEY, b TEXT);").unwrap();
    std::fs::write(p("h.csv"), "a,b\r1,x\r2,y\r").unwrap();
    std::fs::write(p("bad.csv"), "1,a\r2,b\r3,c\rx,d\r").unwrap();
    let (schema, h, bad, db) = (p("s.sql"), p("h.csv"), p("bad.csv"), p("db"));
    let (ok, _, err) = strata(&[
        "import",
        &db,
        "--schema",
        &schema,
        "--table",
        "t",
        "--header=skip",
        &h,
    ]);
    assert!(ok, "{err}");
    assert_eq!(strata(&["scan", &db, "t"]).1, "1,x\n2,y\n");
    let (ok, _, err) = strata(&[
        "import",
        &p("db2"),
        "--schema",
        &schema,
        "--table",
        "t",
        &bad,
    ]);
    assert!(!ok && err.contains("bad.csv:4: column a"), "{err}");
}

/// `scan` quotes a first field starting with U+FEFF: written bare, it was
/// read back as a byte-order mark and dropped, so the output of `scan`
/// did not re-import as the table it came from.
#[test]
fn scan_output_with_a_leading_feff_reimports_identically() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("s.sql"), "CREATE TABLE t (b TEXT PRIMARY KEY, n INT);").unwrap();
    std::fs::write(
        p("a.csv"),
        "\"\u{FEFF}a\",1\n\"\u{FEFF}\",2\n\"\u{FEFF}b\u{FEFF}\",3\n",
    )
    .unwrap();
    let schema = p("s.sql");
    let (ok, _, err) = strata(&[
        "import",
        &p("db"),
        "--schema",
        &schema,
        "--table",
        "t",
        &p("a.csv"),
    ]);
    assert!(ok, "{err}");
    let (ok, out, err) = strata(&["scan", &p("db"), "t"]);
    assert!(ok, "{err}");
    // Sorted by key: "\u{FEFF}" first.
    assert!(out.starts_with("\"\u{FEFF}\",2\n"), "{out:?}");
    std::fs::write(p("out.csv"), &out).unwrap();
    let (ok, _, err) = strata(&[
        "import",
        &p("db2"),
        "--schema",
        &schema,
        "--table",
        "t",
        "--null",
        "\\N",
        &p("out.csv"),
    ]);
    assert!(ok, "{err}");
    assert_eq!(strata(&["scan", &p("db2"), "t"]).1, out);
}
