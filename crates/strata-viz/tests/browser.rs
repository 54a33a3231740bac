//! The page in a real browser: builds a database over three sessions with a
//! workload that makes L0 sublevels, compactions, moves, ingestions, a WAL
//! recovered at open and an import of a table with an index, renders
//! `strata viz`'s page in headless Chromium (driven over the DevTools
//! protocol by the `headless_chrome` crate, which never downloads a
//! browser), steps the timeline forwards and backwards and checks that the
//! file count and L0 sublevel count the page shows equal the oracle's at
//! each step (the listener's events for the earlier sessions, the MANIFEST
//! for the last), that every open is a step, that the catalog's tables and
//! indexes label the key axis, hovers files and checks their details, and
//! saves a screenshot. `checkpoints_are_steps_of_the_timeline` checks the
//! checkpoint steps: their text, and the files drawn there against each
//! checkpoint's own MANIFEST.
//!
//! Without Chromium the test prints how to install it and passes, except
//! under CI (`CI=true`), where it fails.
//!
//! `docs_screenshots` (ignored; `cargo test -p strata-viz --release --test
//! browser -- --ignored`) renders the wide-file scenario with flush
//! splitting off and on and writes the PNGs in `docs/`.
#![allow(clippy::unwrap_used)] // tests may unwrap

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions, Tab};
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::events::{Event, EventCollector, EventRecord};
use strata::inspect::{self, ManifestHistory, Tree};
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options};
use support::dir_listing;

mod support;

const CHROMIUM: &[&str] = &["/usr/bin/chromium", "/usr/bin/chromium-browser"];

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CHROME") {
        return Some(PathBuf::from(p));
    }
    CHROMIUM.iter().map(PathBuf::from).find(|p| p.exists())
}

/// The browser, or `None` (after saying how to get one) when there is none
/// outside CI.
fn browser(profile: &Path) -> Option<Browser> {
    let Some(path) = chromium() else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("Chromium is missing under CI: test.sh installs it (apt-get install chromium)");
        }
        eprintln!(
            "SKIPPED: Chromium not found; install it with `sudo apt-get install chromium` \
             (or set CHROME=/path/to/chrome) to run the browser test"
        );
        return None;
    };
    let args: Vec<&OsStr> = [
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let opts = LaunchOptions::default_builder()
        .path(Some(path))
        .headless(true)
        .sandbox(false)
        .window_size(Some((1600, 1000)))
        .user_data_dir(Some(profile.to_path_buf()))
        .args(args)
        .idle_browser_timeout(std::time::Duration::from_secs(120))
        .build()
        .expect("launch options");
    Some(Browser::new(opts).expect("starting Chromium"))
}

fn small_opts() -> Options {
    Options {
        memtable_size: 48 << 10,
        compaction: CompactionOptions {
            target_file_size: 24 << 10,
            base_level_bytes: 256 << 10,
            flush_split_bytes: 16 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

fn small_opts_heard(c: &Arc<EventCollector>) -> Options {
    Options {
        event_listener: Some(Arc::clone(c) as Arc<dyn strata::events::EventListener>),
        ..small_opts()
    }
}

/// A small table with a secondary index, imported through `strata-import`
/// (its catalog names the bands on the key axis).
const ITEMS_SCHEMA: &str = "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), qty INT);
CREATE INDEX by_name ON items (name);";

fn import_items(db: &Db, dir: &Path) {
    let csv = dir.with_extension("items.csv");
    let mut text = String::new();
    let mut rng = StdRng::seed_from_u64(7);
    for id in 0..3000 {
        text.push_str(&format!(
            "{id},name{:05},{}\n",
            rng.gen_range(0..99_999),
            id % 17
        ));
    }
    std::fs::write(&csv, text).unwrap();
    let schema = strata_import::Schema::parse(ITEMS_SCHEMA).unwrap();
    let table = schema.tables.iter().find(|t| t.name == "items").unwrap();
    let opts = strata_import::ImportOptions {
        dialect: strata_import::csv::dialect::Dialect::csv(),
        ..strata_import::ImportOptions::default()
    };
    strata_import::import(
        db,
        table,
        &[strata_import::csv::input::Input::File(csv)],
        &opts,
    )
    .unwrap();
}

/// Three sessions: random puts with flushes; reopened, two ingestions
/// (one over keys still in the memtable, which takes the queued path),
/// with an unflushed tail left in the WAL; reopened (recovery writes that
/// tail into L0), an overwrite pass and an import of a table with an
/// index. Returns what the listener heard.
fn build_db(dir: &Path) -> Vec<EventRecord> {
    let heard = Arc::new(EventCollector::new());
    let db = Db::open(dir, small_opts_heard(&heard)).unwrap();
    let mut rng = StdRng::seed_from_u64(13);
    let mut keys: Vec<u32> = (0..12_000).collect();
    keys.shuffle(&mut rng);
    for (n, k) in keys.iter().enumerate() {
        db.put(format!("key{k:06}").as_bytes(), [b'v'; 60]).unwrap();
        if n % 3000 == 2999 {
            db.flush().unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    db.close().unwrap();

    let db = Db::open(dir, small_opts_heard(&heard)).unwrap();
    for i in 0..2 {
        let f = dir.with_extension(format!("ingest{i}.sst"));
        let mut w = SstWriter::create(&f, SstOptions::for_ingestion()).unwrap();
        for j in 0..200 {
            let v = [b'i'; 40];
            w.put(format!("key{:06}", 20_000 + i * 1000 + j).as_bytes(), v)
                .unwrap();
        }
        w.finish().unwrap();
        if i == 1 {
            db.put(b"key021050", b"in the memtable").unwrap();
        }
        let o = IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        };
        db.ingest(&[f], &o).unwrap();
    }
    for k in 0..100u32 {
        db.put(format!("key{:06}", k * 97).as_bytes(), b"left in the WAL")
            .unwrap();
    }
    db.wait_for_compactions().unwrap();
    db.close().unwrap();

    let db = Db::open(dir, small_opts_heard(&heard)).unwrap();
    for _ in 0..3000 {
        let k: u32 = rng.gen_range(0..12_000);
        db.put(format!("key{k:06}").as_bytes(), [b'w'; 60]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    import_items(&db, dir);
    db.wait_for_compactions().unwrap();
    db.close().unwrap();
    heard.records()
}

/// Per step of the page: the file count, L0 sublevel count and tree. The
/// oracle: up to the last open, the listener's events replayed strictly
/// (each open sets the whole tree); from there, the current MANIFEST's
/// edits that change the tree or queue an ingestion. Also returns where
/// the MANIFEST's part starts.
fn expected_steps(
    heard: &[EventRecord],
    m: &ManifestHistory,
) -> (Vec<(usize, usize, Tree)>, usize) {
    let mut out = Vec::new();
    let push = |out: &mut Vec<(usize, usize, Tree)>, tree: &Tree| {
        let sub = inspect::l0_sublevels(tree.files(0)).num_sublevels;
        out.push((tree.num_files(), sub, tree.clone()));
    };
    let last_open = heard
        .iter()
        .rposition(|r| matches!(r.event, Event::Open { .. }))
        .unwrap();
    let mut tree = Tree::new();
    for r in &heard[..last_open] {
        if let Some(files) = r.event.whole_tree() {
            tree = Tree::new();
            tree.apply_files(files, &[]).unwrap();
        } else if let Some((a, rm)) = r.event.tree_change() {
            tree.apply_files(a, rm).unwrap();
        } else {
            continue;
        }
        push(&mut out, &tree);
    }
    let start = out.len();
    let mut tree = Tree::new();
    for (i, e) in m.edits.iter().enumerate() {
        if i > 0 && !e.changes_tree() && e.queued.is_empty() {
            continue;
        }
        tree.apply(e).unwrap();
        push(&mut out, &tree);
    }
    (out, start)
}

fn eval(tab: &Tab, js: &str) -> serde_json::Value {
    tab.evaluate(js, false)
        .unwrap_or_else(|e| panic!("{js}: {e}"))
        .value
        .unwrap_or(serde_json::Value::Null)
}

fn open_page(browser: &Browser, page: &Path) -> Arc<Tab> {
    let tab = browser.new_tab().unwrap();
    tab.navigate_to(&format!("file://{}", page.display()))
        .unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("body[data-ready='1']").unwrap();
    tab
}

/// Moves the mouse over file `number` as drawn at the current step.
fn hover(tab: &Tab, number: u64) {
    let b = eval(tab, &format!("JSON.stringify(strataViz.fileBox({number}))"));
    let b: serde_json::Value = serde_json::from_str(b.as_str().unwrap()).unwrap();
    let (x, y) = (b["x"].as_f64().unwrap(), b["y"].as_f64().unwrap());
    tab.move_mouse_to_point(headless_chrome::browser::tab::point::Point { x, y })
        .unwrap();
}

fn screenshot(tab: &Tab, out: &Path) {
    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .unwrap();
    std::fs::write(out, png).unwrap();
}

#[test]
fn page_matches_the_manifest_step_by_step() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let heard = build_db(&dir);
    let manifest = inspect::read_manifest(&dir).unwrap();
    let (want, manifest_start) = expected_steps(&heard, &manifest);
    assert!(want.len() > 20, "{} steps", want.len());
    assert!(
        want.iter().any(|s| s.1 >= 2),
        "the workload should stack L0 into sublevels"
    );

    let page = d.path().join("lsm.html");
    let before = dir_listing(&dir);
    std::fs::write(&page, strata_viz::render_page(&dir).unwrap()).unwrap();
    assert_eq!(
        dir_listing(&dir),
        before,
        "rendering changed the database directory (names, sizes, mtimes or bytes)"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page must fetch nothing"
    );

    let profile = d.path().join("chrome-profile");
    let Some(browser) = browser(&profile) else {
        return;
    };
    let tab = open_page(&browser, &page);
    let steps = eval(&tab, "strataViz.steps").as_u64().unwrap() as usize;
    assert_eq!(steps, want.len(), "page steps vs the oracle's");
    assert_eq!(
        eval(&tab, "strataViz.manifestStart").as_u64(),
        Some(manifest_start as u64)
    );
    assert!(manifest_start > 10, "earlier sessions give steps");
    // One open per session, numbered, where the oracle's sessions start.
    let opens: Vec<(usize, u64)> = serde_json::from_str(
        eval(&tab, "JSON.stringify(strataViz.opens())")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        opens.iter().map(|o| o.1).collect::<Vec<_>>(),
        [1, 2, 3],
        "{opens:?}"
    );
    assert_eq!(opens[2].0, manifest_start);

    // Forwards, then backwards (checkpoint restores), then the end.
    let n = want.len();
    let mut points = vec![0, 1, n / 4, n / 2, n / 2 + 1, n - 1, n / 3, 2];
    // And every step in order: the drawn layout must follow each edit.
    points.extend(0..n);
    // The step with the deepest L0.
    let deepest = (0..n).max_by_key(|&i| want[i].1).unwrap();
    points.push(deepest);
    for &s in &points {
        // One round trip per step: what the page shows after moving there.
        let js = format!(
            "JSON.stringify({{ shown: strataViz.show({s}), layout: strataViz.layout(), \
             text: ['st-files', 'st-sub', 'st-l0', 'stepno'].map(id => document.getElementById(id).textContent) }})"
        );
        let page: serde_json::Value =
            serde_json::from_str(eval(&tab, &js).as_str().unwrap()).unwrap();
        assert_eq!(page["shown"].as_u64(), Some(s as u64));
        let text_of = |i: usize| page["text"][i].as_str().unwrap().to_string();
        let files: usize = text_of(0).parse().unwrap();
        let subs: usize = text_of(1).parse().unwrap();
        let l0: usize = text_of(2).parse().unwrap();
        assert_eq!(files, want[s].0, "files at step {s}");
        assert_eq!(subs, want[s].1, "L0 sublevels at step {s}");
        assert_eq!(l0, want[s].2.files(0).len(), "L0 files at step {s}");
        // Every file drawn where the MANIFEST puts it: level and, in L0,
        // the engine's sublevel.
        let mut drawn: Vec<(u64, usize, usize)> =
            serde_json::from_value(page["layout"].clone()).unwrap();
        drawn.sort_unstable();
        let tree = &want[s].2;
        let shape = inspect::l0_sublevels(tree.files(0));
        let mut expect: Vec<(u64, usize, usize)> = (0..inspect::LEVELS)
            .flat_map(|l| tree.files(l).iter().map(move |f| (l, f)))
            .map(|(l, f)| {
                let sub = if l == 0 { shape.sublevel[&f.number] } else { 0 };
                (f.number, l, sub)
            })
            .collect();
        expect.sort_unstable();
        assert_eq!(drawn, expect, "files drawn at step {s}");
        let label = text_of(3);
        assert!(
            label.starts_with(&format!("step {s} / {}", n - 1)),
            "{label}"
        );
        let from = if s < manifest_start {
            "from EVENTS"
        } else {
            "from MANIFEST"
        };
        assert!(label.ends_with(from), "step {s}: {label}");
    }

    // Hover the newest L0 file at the deepest step: its details.
    eval(&tab, &format!("strataViz.show({deepest})"));
    let tree = &want[deepest].2;
    let shape = inspect::l0_sublevels(tree.files(0));
    let f = tree
        .files(0)
        .iter()
        .max_by_key(|f| shape.sublevel[&f.number])
        .unwrap();
    hover(&tab, f.number);
    eval(&tab, &format!("strataViz.show({deepest})"));
    // "key value" per line, from the details grid.
    let details = eval(
        &tab,
        "[...document.querySelectorAll('#details .k')].map(k => k.textContent.padEnd(9) + k.nextElementSibling.textContent).join('\\n')",
    )
    .as_str()
    .unwrap_or_default()
    .to_string();
    let want_lines = [
        format!("file     {}", f.number),
        format!("level    L0, sublevel {}", shape.sublevel[&f.number]),
        format!("smallest {}", strata_viz::text::display_key(&f.smallest)),
        format!("largest  {}", strata_viz::text::display_key(&f.largest)),
        format!("({} B)", f.size),
        format!("entries  {}", f.entries.unwrap()),
        format!("seqs     {} … {}", f.smallest_seq, f.largest_seq),
    ];
    for w in &want_lines {
        assert!(
            details.contains(w.as_str()),
            "details lack {w:?}:\n{details}"
        );
    }
    assert!(
        details.contains("made by  step")
            && (details.contains("flush job") || details.contains("compaction job")),
        "{details}"
    );

    // The catalog's bands over the key axis, in key order, and a file of
    // the secondary index named by its band.
    let bands: Vec<(String, usize, usize)> = serde_json::from_str(
        eval(&tab, "JSON.stringify(strataViz.bands())")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let labels: Vec<&str> = bands.iter().map(|b| b.0.as_str()).collect();
    assert_eq!(labels, ["catalog", "items", "items.by_name"]);
    eval(&tab, &format!("strataViz.show({})", n - 1));
    let last = &want[n - 1].2;
    let index_prefix = strata_import::encode::key::index_prefix(1, 1);
    let f = (0..inspect::LEVELS)
        .flat_map(|l| last.files(l).iter())
        .find(|f| f.smallest.starts_with(&index_prefix))
        .expect("a file of items.by_name");
    let fb = eval(
        &tab,
        &format!("JSON.stringify(strataViz.fileBands({}))", f.number),
    );
    assert_eq!(fb.as_str().unwrap(), r#"["items.by_name","items.by_name"]"#);
    hover(&tab, f.number);
    eval(&tab, &format!("strataViz.show({})", n - 1));
    let details = eval(&tab, "document.getElementById('details').textContent");
    // Its bounds decoded under the catalog: the index's column values.
    let schema = strata_import::schema::Schema::parse(ITEMS_SCHEMA).unwrap();
    let codec = strata_import::codec::TableCodec::new(schema.table("items").unwrap().clone(), 1);
    let want_lo = format!("= items.by_name {}", codec.describe_key(1, &f.smallest));
    assert!(want_lo.contains('('), "{want_lo}");
    assert!(
        details.as_str().unwrap().contains(&want_lo),
        "{details} lacks {want_lo}"
    );
    // The import's ingestion says which phases led to it (and its own).
    let ingest_step = eval(
        &tab,
        "(() => { const S = JSON.parse(document.getElementById('data').textContent).s; return S.imp.length ? S.imp[0][0] : -1; })()",
    )
    .as_i64()
    .unwrap();
    assert!(ingest_step >= manifest_start as i64, "{ingest_step}");
    eval(&tab, &format!("strataViz.show({ingest_step})"));
    let what = eval(&tab, "strataViz.what()");
    let what = what.as_str().unwrap();
    assert!(
        what.starts_with("ingest")
            && what.contains("import items: read 3000 rows")
            && what.contains("items: sort and write 3000 rows")
            && what.contains("items: ingest 3000 rows"),
        "{what}"
    );

    // Keyboard: an arrow key steps once.
    eval(&tab, "strataViz.show(3)");
    tab.press_key("ArrowRight").unwrap();
    eval(&tab, "strataViz.show(strataViz.step())");
    assert_eq!(eval(&tab, "strataViz.step()").as_u64(), Some(4));

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viz-browser-test.png");
    eval(&tab, &format!("strataViz.show({deepest})"));
    screenshot(&tab, &shot);
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    eprintln!("screenshot: {}", shot.display());
}

/// Checkpoints on the page: each completed checkpoint is a step (badge
/// `checkpoint`, its directory, sequence number and tables in the step's
/// text), the files drawn there are the files the checkpoint holds (its
/// own MANIFEST, read back), and the footer counts them. Two sessions, a
/// checkpoint in each, no automatic compaction (so none ends while a
/// checkpoint links its files).
#[test]
fn checkpoints_are_steps_of_the_timeline() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let opts = Options {
        compaction: CompactionOptions {
            l0_compaction_threshold: 20,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let mut copies = Vec::new();
    for session in 0..2 {
        let db = Db::open(&dir, opts.clone()).unwrap();
        for round in 0..3 {
            for k in 0..50 {
                db.put(format!("s{session}r{round}k{k:03}"), "v").unwrap();
            }
            if round == 1 {
                let cp = d.path().join(format!("cp<{session}>"));
                let info = db.checkpoint(&cp).unwrap();
                copies.push((cp, info));
            } else {
                db.flush().unwrap();
            }
        }
        db.close().unwrap();
    }
    let page = d.path().join("lsm.html");
    std::fs::write(&page, strata_viz::render_page(&dir).unwrap()).unwrap();

    let profile = d.path().join("chrome-profile");
    let Some(browser) = browser(&profile) else {
        return;
    };
    let tab = open_page(&browser, &page);
    let marked: Vec<(usize, String)> = serde_json::from_str(
        eval(&tab, "JSON.stringify(strataViz.checkpoints())")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(marked.len(), 2, "{marked:?}");
    for ((step, dir_shown), (cp, info)) in marked.iter().zip(&copies) {
        assert_eq!(dir_shown, &cp.display().to_string());
        let js = format!(
            "JSON.stringify({{ shown: strataViz.show({step}), layout: strataViz.layout(), \
             what: strataViz.what() }})"
        );
        let shown: serde_json::Value =
            serde_json::from_str(eval(&tab, &js).as_str().unwrap()).unwrap();
        let what = shown["what"].as_str().unwrap();
        // The directory is escaped into the text, not taken for markup.
        assert!(
            what.starts_with(&format!("checkpointcheckpoint to {}: ", cp.display()))
                && what.contains(&format!("up to seq {}, ", info.sequence))
                && what.contains(&format!("{} tables", info.tables)),
            "{what}"
        );
        let mut drawn: Vec<(u64, usize)> =
            serde_json::from_value::<Vec<(u64, usize, usize)>>(shown["layout"].clone())
                .unwrap()
                .into_iter()
                .map(|(n, l, _)| (n, l))
                .collect();
        drawn.sort_unstable();
        let m = inspect::read_manifest(cp).unwrap();
        let mut t = Tree::new();
        for e in &m.edits {
            t.apply(e).unwrap();
        }
        let mut held: Vec<(u64, usize)> = (0..inspect::LEVELS)
            .flat_map(|l| t.files(l).iter().map(move |f| (f.number, l)))
            .collect();
        held.sort_unstable();
        assert_eq!(
            drawn,
            held,
            "files drawn at the checkpoint of {}",
            cp.display()
        );
    }
    let foot = eval(&tab, "document.getElementById('foot').textContent");
    assert!(
        foot.as_str().unwrap().contains(", 2 checkpoints ("),
        "{foot}"
    );
}

/// The wide-file scenario of `crates/strata/tests/wide_file.rs` (a
/// statistics key at the bottom of the key space written every 10,000 keys
/// while 1,000,000 keys arrive shuffled within windows of 50,000), loaded
/// with L0 sublevels and flush splitting off and on.
fn wide_file_db(dir: &Path, split: bool) {
    let opts = Options {
        memtable_size: 1 << 20,
        compaction: CompactionOptions {
            l0_sublevels: split,
            flush_split_bytes: 64 << 10,
            target_file_size: 1 << 20,
            base_level_bytes: 4 << 20,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir, opts).unwrap();
    let mut order: Vec<u64> = (0..1_000_000).collect();
    let mut rng = StdRng::seed_from_u64(5);
    for w in order.chunks_mut(50_000) {
        w.shuffle(&mut rng);
    }
    for (n, i) in order.iter().enumerate() {
        let mut k = b"d".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        db.put(&k, i.to_le_bytes()).unwrap();
        if (n + 1) % 10_000 == 0 {
            db.put(b"\x00stats", (n + 1).to_string().as_bytes())
                .unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    db.close().unwrap();
}

/// The TPC-C `stock` schema of `strata demo` (crates/strata-cli/src/tpcc.rs).
const STOCK_SCHEMA: &str = include_str!("../../strata-cli/src/tpcc_stock.sql");

/// TPC-C stock rows of warehouse `w` (100,000 items) in a seeded random
/// order, as CSV (the shape of `shared/datagen/tpcc_stock.py`).
fn stock_csv(w: u32, out: &Path) {
    let mut rng = StdRng::seed_from_u64(u64::from(w));
    let mut items: Vec<u32> = (1..=100_000).collect();
    items.shuffle(&mut rng);
    let s = |rng: &mut StdRng, n: usize| -> String {
        (0..n).map(|_| rng.gen_range(b'a'..=b'z') as char).collect()
    };
    let mut text = String::with_capacity(32 << 20);
    for i in items {
        let dists: Vec<String> = (0..10).map(|_| s(&mut rng, 24)).collect();
        let len = rng.gen_range(26..=50);
        text.push_str(&format!(
            "{i},{w},{},{},0,0,0,{}\n",
            rng.gen_range(10..=100),
            dists.join(","),
            s(&mut rng, len)
        ));
    }
    std::fs::write(out, text).unwrap();
}

/// Two TPC-C warehouses imported one per session (random row order, 16 MiB
/// of sort memory, 2 MiB table files): the second import's secondary index overlaps the
/// first's, its primary index does not.
fn tpcc_db(dir: &Path) {
    let schema = strata_import::Schema::parse(STOCK_SCHEMA).unwrap();
    let table = schema.tables.iter().find(|t| t.name == "stock").unwrap();
    for w in 1..=2 {
        let db = Db::open(dir, Options::default()).unwrap();
        let csv = dir.with_extension(format!("stock{w}.csv"));
        stock_csv(w, &csv);
        let opts = strata_import::ImportOptions {
            dialect: strata_import::csv::dialect::Dialect::csv(),
            memory: 16 << 20,
            target_file_size: 2 << 20,
            ..strata_import::ImportOptions::default()
        };
        strata_import::import(
            &db,
            table,
            &[strata_import::csv::input::Input::File(csv)],
            &opts,
        )
        .unwrap();
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
    }
}

#[test]
#[ignore = "writes the screenshots in docs/; run with --ignored"]
fn docs_screenshots() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let d = tempfile::tempdir().unwrap();
    let Some(browser) = browser(&d.path().join("profile")) else {
        return;
    };
    {
        let dir = d.path().join("tpcc");
        tpcc_db(&dir);
        let page = d.path().join("tpcc.html");
        std::fs::write(&page, strata_viz::render_page(&dir).unwrap()).unwrap();
        let tab = open_page(&browser, &page);
        // The second import's ingestion (the last ingest step).
        let n = eval(
            &tab,
            "(() => { const S = JSON.parse(document.getElementById('data').textContent).s; let at = S.kind.length - 1; \
             for (let i = 0; i < S.kind.length; i++) if (S.kind[i] === 4 || S.kind[i] === 5) at = i; return at + 1; })()",
        )
        .as_u64()
        .unwrap();
        eval(&tab, &format!("strataViz.show({})", n - 1));
        // Hover a file of the secondary index drawn at that step.
        let f = eval(
            &tab,
            "(() => { for (const [num] of strataViz.layout()) { const b = strataViz.fileBands(num); \
             if (b && b[0] === 'stock.stock_i_id') return num; } return -1; })()",
        )
        .as_i64()
        .unwrap();
        if f >= 0 {
            hover(&tab, f as u64);
            eval(&tab, &format!("strataViz.show({})", n - 1));
        }
        eprintln!(
            "tpcc: {n} steps, bands {}",
            eval(&tab, "JSON.stringify(strataViz.bands())")
        );
        screenshot(&tab, &docs.join("viz-tpcc-import.png"));
    }
    // A W1 import in `--mode direct`, prepared by the caller (docs/viz.md
    // gives the commands): shown at the step with the most files.
    if let Ok(db) = std::env::var("STRATA_VIZ_W1_DIRECT") {
        let page = d.path().join("w1-direct.html");
        std::fs::write(&page, strata_viz::render_page(Path::new(&db)).unwrap()).unwrap();
        let tab = open_page(&browser, &page);
        let at = eval(
            &tab,
            "(() => { let best = 0, most = -1; for (let t = 0; t < strataViz.steps; t++) { strataViz.show(t); \
             const n = +document.getElementById('st-files').textContent; if (n > most) { most = n; best = t; } } \
             return best; })()",
        )
        .as_u64()
        .unwrap();
        eval(&tab, &format!("strataViz.show({at})"));
        eprintln!("w1 direct: step {at}: {}", eval(&tab, "strataViz.what()"));
        screenshot(&tab, &docs.join("viz-w1-direct.png"));
    }
    for split in [false, true] {
        let name = if split { "split" } else { "unsplit" };
        let dir = d.path().join(name);
        wide_file_db(&dir, split);
        let page = d.path().join(format!("{name}.html"));
        std::fs::write(&page, strata_viz::render_page(&dir).unwrap()).unwrap();
        let tab = open_page(&browser, &page);
        // The biggest compaction out of L0, and the step before it.
        let big = eval(
            &tab,
            "(() => { let best = 0, at = 0; const S = JSON.parse(document.getElementById('data').textContent).s; \
             for (let i = 0; i < S.kind.length; i++) if (S.kind[i] === 2 && S.slv[i] === 0 && S.br[i] > best) { best = S.br[i]; at = i; } return at; })()",
        )
        .as_u64()
        .unwrap();
        // Unsplit: the last flush before the biggest compaction (the wide
        // files stacked up); split: the flush leaving the most L0 files.
        let at = eval(
            &tab,
            &format!(
                "(() => {{ const S = JSON.parse(document.getElementById('data').textContent).s; let at = 0, most = -1; \
                 for (let i = 1; i < S.kind.length; i++) if (S.kind[i] === 1) {{ \
                 if ({split}) {{ strataViz.show(i); const n = +document.getElementById('st-files').textContent; if (n > most) {{ most = n; at = i; }} }} \
                 else if (i < {big}) at = i; }} return at; }})()"
            ),
        )
        .as_u64()
        .unwrap();
        eval(&tab, &format!("strataViz.show({at})"));
        // Hover the newest flagged file, if any, so its details show.
        let wide = eval(&tab, "JSON.stringify(strataViz.wide())");
        let wide: Vec<u64> = serde_json::from_str(wide.as_str().unwrap()).unwrap();
        eprintln!("{name}: wide files before the compaction: {wide:?}");
        if let Some(n) = wide.iter().max() {
            hover(&tab, *n);
            eval(&tab, &format!("strataViz.show({at})"));
        }
        screenshot(&tab, &docs.join(format!("viz-wide-file-{name}.png")));
        if !split {
            eval(&tab, &format!("strataViz.show({big})"));
            screenshot(
                &tab,
                &docs.join(format!("viz-wide-file-{name}-compaction.png")),
            );
        }
        eprintln!("{name}: biggest L0 compaction at step {big}");
    }
}
