//! Data-driven and property tests of the encodings and the chunker.
//!
//! `testdata/key_encoding.txt` lists `TYPE value` lines; the golden file
//! `testdata/key_encoding.golden` holds each value's key encoding in hex
//! and the decoded value. `testdata/dialect.golden` holds the records the
//! CSV dialect cases below parse into. Run with `STRATA_REWRITE=1` to
//! rewrite the golden files after a deliberate change, and review the diff.

#![allow(clippy::unwrap_used)] // tests may unwrap

use proptest::prelude::*;
use std::cmp::Ordering;
use strata_import::chunk::{LineCounter, Splitter};
use strata_import::csv::dialect::{Dialect, Header};
use strata_import::csv::records::Records;
use strata_import::encode::key::{decode_value, encode_value};
use strata_import::schema::{ColumnType, Schema};
use strata_import::value::{self, Value};

fn testdata(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn check_golden(name: &str, got: &str) {
    let path = testdata(name);
    if std::env::var_os("STRATA_REWRITE").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with STRATA_REWRITE=1)", path.display()));
    assert_eq!(got, want, "{name} differs from its golden file");
}

fn ty(s: &str) -> ColumnType {
    let schema = Schema::parse(&format!("CREATE TABLE t (c {s} PRIMARY KEY)")).unwrap();
    schema.tables[0].columns[0].ty.clone()
}

#[test]
fn key_encoding_golden() {
    let input = std::fs::read_to_string(testdata("key_encoding.txt")).unwrap();
    let mut out = String::new();
    for line in input.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let (t, text) = line.split_once(' ').unwrap_or((line, ""));
        let t = ty(t);
        let v = if text == "NULL" {
            Value::Null
        } else {
            value::parse(&t, &text.replace("\\0", "\0")).unwrap()
        };
        let mut k = Vec::new();
        encode_value(&mut k, &v);
        let back = decode_value(&mut k.as_slice(), &t).unwrap();
        let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
        let shown = match &back {
            Value::Null => "NULL".to_string(),
            v => value::format(&t, v).replace('\0', "\\0"),
        };
        out.push_str(&format!("{line}\n  -> {hex} = {shown}\n"));
    }
    check_golden("key_encoding.golden", &out);
}

/// The dialect cases: options and input bytes.
fn dialect_cases() -> Vec<(&'static str, Dialect, &'static [u8])> {
    let semi = Dialect {
        delimiter: b';',
        quote: Some(b'\''),
        escape: Some(b'\\'),
        null: "NULL".into(),
        header: Header::Skip,
        backslash_escapes: false,
    };
    vec![
        ("plain LF", Dialect::csv(), b"1,a\n2,b\n"),
        ("CRLF and no final newline", Dialect::csv(), b"1,a\r\n2,b"),
        ("BOM", Dialect::csv(), b"\xEF\xBB\xBF1,a\n"),
        (
            "quoted delimiter, quote, newlines",
            Dialect::csv(),
            b"1,\"a,\"\"b\"\"\nc\r\nd\"\n2,x\n",
        ),
        (
            "quote inside an unquoted field",
            Dialect::csv(),
            b"1,a\"b\n2,c\n",
        ),
        (
            "blank lines are records of one empty field",
            Dialect::csv(),
            b"1,a\n\n\r\n2,b\n",
        ),
        (
            "semicolon, single quote, backslash escape, header",
            semi,
            b"id;name\n1;'it\\'s;x'\n2;NULL\n",
        ),
        ("tsv", Dialect::tsv(), b"1\ta\"b\t\\N\n2\t\t\n"),
        (
            "tsv, a blank line is an empty string",
            Dialect::tsv(),
            b"a\n\nb\r\n\r\n",
        ),
    ]
}

/// A parsed record: its line and its fields (`None`: NULL).
type Record = (u64, Vec<Option<String>>);

/// The records of `data` (whose first byte is on line `first_line`) as the
/// parse workers read them (`Records`, lines from `LineCounter`).
fn read_records(d: &Dialect, data: &[u8], first_line: u64) -> Vec<Record> {
    let mut r = Records::new(d, data);
    let mut lines = LineCounter::new(data, first_line);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let line = lines.record(rec.start).0;
        let fields = (0..rec.len())
            .map(|i| {
                let s = String::from_utf8_lossy(&rec.bytes[rec.range(i)]).to_string();
                (s != d.null).then_some(s)
            })
            .collect();
        out.push((line, fields));
    }
    out
}

fn split_all(d: &Dialect, data: &[u8], chunk: usize) -> Result<Vec<Record>, String> {
    let mut sp = Splitter::new(
        Box::new(std::io::Cursor::new(data.to_vec())),
        d,
        0,
        "in".into(),
        0,
        chunk,
    );
    let mut out = Vec::new();
    while let Some(c) = sp.next_chunk().map_err(|e| e.to_string())? {
        out.extend(read_records(d, &c.data, c.first_line));
        // The next chunk is read into this one's buffer (as the pipeline
        // does): nothing of it may leak into later chunks.
        sp.recycle(c.data);
    }
    Ok(out)
}

#[test]
fn dialect_golden() {
    let mut out = String::new();
    for (name, d, data) in dialect_cases() {
        out.push_str(&format!("== {name}\n"));
        for chunk in [1, 3, 1 << 20] {
            let recs = split_all(&d, data, chunk).unwrap();
            if chunk == 1 << 20 {
                for (line, fields) in &recs {
                    out.push_str(&format!("{line}: {fields:?}\n"));
                }
            } else {
                assert_eq!(
                    recs,
                    split_all(&d, data, 1 << 20).unwrap(),
                    "{name}, chunk {chunk}"
                );
            }
        }
    }
    check_golden("dialect.golden", &out);
}

fn sql_cmp(a: &Value, b: &Value) -> Ordering {
    use Value::*;
    match (a, b) {
        (Null, Null) => Ordering::Equal,
        (Null, _) => Ordering::Less,
        (_, Null) => Ordering::Greater,
        (Int(x), Int(y)) | (Timestamp(x), Timestamp(y)) => x.cmp(y),
        (Date(x), Date(y)) => x.cmp(y),
        (Decimal(x), Decimal(y)) => x.cmp(y),
        // SQL (PostgreSQL): NaN is above every number and equal to itself.
        (Float(x), Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap(),
        },
        (Text(x), Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bytes(x), Bytes(y)) => x.cmp(y),
        (Bool(x), Bool(y)) => x.cmp(y),
        _ => unreachable!(),
    }
}

fn values() -> impl Strategy<Value = (ColumnType, Vec<Value>)> {
    let text = proptest::collection::vec(
        prop_oneof![Just(0u8), Just(1), Just(b'a'), Just(0xFF), any::<u8>()],
        0..6,
    );
    prop_oneof![
        proptest::collection::vec(any::<i64>().prop_map(Value::Int), 1..8)
            .prop_map(|v| (ColumnType::BigInt, v)),
        proptest::collection::vec(
            prop_oneof![
                any::<f64>(),
                Just(0.0),
                Just(-0.0),
                Just(f64::NEG_INFINITY),
                Just(f64::NAN),
                -10.0..10.0f64
            ]
            .prop_map(|f| Value::Float(value::canonical_float(f))),
            1..8
        )
        .prop_map(|v| (ColumnType::Double, v)),
        proptest::collection::vec(
            any::<i64>().prop_map(|d| Value::Decimal(d as i128 * 1000)),
            1..8
        )
        .prop_map(|v| (
            ColumnType::Decimal {
                precision: 38,
                scale: 3
            },
            v
        )),
        proptest::collection::vec(
            text.clone()
                .prop_map(|b| Value::Text(String::from_utf8_lossy(&b).to_string())),
            1..8
        )
        .prop_map(|v| (ColumnType::Text, v)),
        proptest::collection::vec(text.prop_map(Value::Bytes), 1..8)
            .prop_map(|v| (ColumnType::Bytea, v)),
        proptest::collection::vec(any::<i32>().prop_map(Value::Date), 1..8)
            .prop_map(|v| (ColumnType::Date, v)),
        proptest::collection::vec(any::<i64>().prop_map(Value::Timestamp), 1..8)
            .prop_map(|v| (ColumnType::Timestamp, v)),
        proptest::collection::vec(any::<bool>().prop_map(Value::Bool), 1..8)
            .prop_map(|v| (ColumnType::Bool, v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Byte order of encoded keys is SQL order, for single values (with
    /// NULLs) and for two-column keys (self-delimiting encodings).
    #[test]
    fn key_order_is_sql_order((t, vs) in values(), nulls in proptest::collection::vec(any::<bool>(), 8)) {
        let vs: Vec<Value> = vs.into_iter().zip(&nulls).map(|(v, &n)| if n { Value::Null } else { v }).collect();
        let enc = |a: &Value, b: &Value| {
            let mut k = Vec::new();
            encode_value(&mut k, a);
            encode_value(&mut k, b);
            k
        };
        for a in &vs {
            let mut one = Vec::new();
            encode_value(&mut one, a);
            let back = decode_value(&mut one.as_slice(), &t).unwrap();
            prop_assert_eq!(sql_cmp(&back, a), Ordering::Equal);
            for b in &vs {
                let mut kb = Vec::new();
                encode_value(&mut kb, b);
                prop_assert_eq!(one.cmp(&kb), sql_cmp(a, b), "{:?} vs {:?}", a, b);
                for c in &vs {
                    let want = sql_cmp(a, b).then(sql_cmp(c, a));
                    prop_assert_eq!(enc(a, c).cmp(&enc(b, a)), want);
                }
            }
        }
    }

    /// The parallel chunker's chunks, parsed one by one, give the same
    /// records and lines as one sequential read of the whole input.
    #[test]
    fn chunks_parse_like_a_sequential_read(
        fields in proptest::collection::vec(proptest::collection::vec(
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b','), Just(b'"'), Just(b'\n'), Just(b'\r'), Just(b'\\')], 0..5), 1..4), 0..30),
        raw in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b','), Just(b'"'), Just(b'\n'), Just(b'\r'), Just(b'\\')], 0..80),
        chunk in 1usize..40,
        escape in any::<bool>(),
    ) {
        let mut d = Dialect::csv();
        if escape {
            d.escape = Some(b'\\');
        }
        // Well-formed records, then arbitrary bytes (maybe malformed).
        let mut data = Vec::new();
        for rec in &fields {
            let f: Vec<Option<String>> = rec.iter().map(|b| Some(String::from_utf8(b.clone()).unwrap())).collect();
            data.extend_from_slice(d.write_record(&f).as_bytes());
            data.push(b'\n');
        }
        data.extend_from_slice(&raw);
        let whole = split_all(&d, &data, 1 << 20);
        let chunked = split_all(&d, &data, chunk);
        prop_assert_eq!(&chunked, &whole);
        // And equal to one reader over everything at once (unless the
        // input ends inside a quote, which the splitter reports).
        if let Ok(w) = whole {
            prop_assert_eq!(w, read_records(&d, &data, 1));
        }
    }
}
