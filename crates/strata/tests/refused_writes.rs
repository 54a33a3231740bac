//! Writes the formats cannot hold are refused whole, before anything
//! reaches the WAL: a key or value longer than a 32-bit length (it used to
//! wrap, so a 4 GiB value was logged as a 10-byte one followed by its bytes
//! read as records, and the database no longer opened), and a range
//! deletion whose begin is above its end (it used to delete nothing,
//! silently, when built into a batch). The SST writer refuses the same.

#![allow(clippy::unwrap_used)] // tests may unwrap

use strata::{
    Db, Options, SstOptions, SstWriter, WriteBatch, WriteOptions, MAX_KEY_BYTES, MAX_VALUE_BYTES,
};

/// A buffer of `n` zero bytes that costs no memory until touched (the
/// allocator maps zero pages lazily): the refusals happen before any copy.
fn lazy_zeros(n: usize) -> Vec<u8> {
    vec![0u8; n]
}

#[test]
fn a_batch_with_an_update_the_formats_cannot_hold_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, Options::default()).unwrap();
    db.put("before", "kept").unwrap();
    let huge = lazy_zeros(MAX_VALUE_BYTES + 1);
    let long_key = lazy_zeros(MAX_KEY_BYTES + 1);
    let cases: Vec<(&str, WriteBatch, &str)> = vec![
        (
            "value one byte too long",
            {
                let mut b = WriteBatch::new();
                b.put("a", "1").put("huge", &huge).put("z", "2");
                b
            },
            "a value of 4294967296 bytes",
        ),
        (
            "key one byte too long",
            {
                let mut b = WriteBatch::new();
                b.put("a", "1").put(&long_key, "v");
                b
            },
            "a key of 4294967288 bytes",
        ),
        (
            "deletion of a key too long",
            {
                let mut b = WriteBatch::new();
                b.delete(&long_key).put("a", "1");
                b
            },
            "a key of",
        ),
        (
            "reversed range",
            {
                let mut b = WriteBatch::new();
                b.put("a", "1").delete_range("c", "a");
                b
            },
            "begin \"c\" is above end \"a\"",
        ),
    ];
    for (name, batch, why) in cases {
        let e = db
            .write(batch, &WriteOptions { sync: true })
            .expect_err(name);
        assert!(e.is_invalid_argument(), "{name}: {e}");
        assert!(e.to_string().contains(why), "{name}: {e}");
        // Nothing of the batch was applied, and the database still writes.
        assert_eq!(db.get("a").unwrap(), None, "{name}");
        assert_eq!(db.get("z").unwrap(), None, "{name}");
    }
    assert!(db.delete_range("c", "a").unwrap_err().is_invalid_argument());
    // The longest value that fits in the length passes the check; an empty
    // range deletes nothing and is accepted, as `Db::delete_range` does.
    let mut ok = WriteBatch::new();
    ok.put("a", "1").delete_range("m", "m");
    db.write(ok, &WriteOptions { sync: true }).unwrap();
    db.close().unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    let all: Vec<_> = db.iter().collect::<strata::Result<_>>().unwrap();
    assert_eq!(
        all,
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"before".to_vec(), b"kept".to_vec())
        ]
    );
}

#[test]
fn the_sst_writer_refuses_what_a_block_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SstWriter::create(dir.path().join("x.sst"), SstOptions::for_ingestion()).unwrap();
    w.put("a", "1").unwrap();
    let e = w.put("b", lazy_zeros(MAX_VALUE_BYTES + 1)).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("a value of 4294967296 bytes"), "{e}");
    let e = w.delete_range("z", "c").unwrap_err();
    assert!(e.to_string().contains("reversed"), "{e}");
    let e = w.delete(lazy_zeros(MAX_KEY_BYTES + 1)).unwrap_err();
    assert!(e.to_string().contains("a key of"), "{e}");
}

/// A refusal travels with the updates it concerns and goes with them: a
/// refused batch appended into another refuses that one too (it used to
/// be dropped, so the appended batch committed without its left-out
/// update: part of a batch), `clear` forgets it (a cleared batch used to
/// be refused forever), and `status` reports it before any write (a
/// refused batch said `len() == 0` / `is_empty()` and nothing more).
#[test]
fn a_refusal_is_carried_by_append_reset_by_clear_and_seen_by_status() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();

    let mut bad = WriteBatch::new();
    bad.delete_range("c", "a");
    assert!(bad.is_empty(), "the refused update is left out");
    let e = bad.status().unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("is above end"), "{e}");

    let mut good = WriteBatch::new();
    good.put("y", "1");
    assert!(good.status().is_ok());
    good.append(&bad);
    assert_eq!(good.len(), 1);
    assert!(good.status().is_err(), "append carries the refusal");
    let e = db.write(good, &WriteOptions::default()).unwrap_err();
    assert!(e.to_string().contains("is above end"), "{e}");
    assert_eq!(
        db.get("y").unwrap(),
        None,
        "nothing of the batch is written"
    );

    // The first reason is the one kept: the batch's own, then the
    // appended one's.
    let mut long = WriteBatch::new();
    long.put(lazy_zeros(MAX_KEY_BYTES + 1), "v");
    long.append(&bad);
    assert!(long.status().unwrap_err().to_string().contains("a key of"));

    let mut cleared = WriteBatch::new();
    cleared.put("x", "1").delete_range("c", "a");
    cleared.clear();
    assert!(cleared.status().is_ok(), "clear forgets the refusal");
    cleared.put("z", "1");
    db.write(cleared, &WriteOptions::default()).unwrap();
    assert_eq!(db.get("z").unwrap(), Some(b"1".to_vec()));
}
