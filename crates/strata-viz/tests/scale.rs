//! The page at scale, on a synthetic history (no database: MANIFEST edits
//! and matching events are generated): flushes of narrow L0 files over a
//! bottom level of thousands of files, and L0 -> L6 compactions rewriting the
//! L6 files under them. Checks in headless Chromium that the file and L0
//! counts the page shows equal the replayed tree's at steps far apart (the
//! page restores checkpoints every 512 steps), and prints the page size,
//! load time and step time.
//!
//! By default 3,000 steps over ~1,000 files; with `STRATA_LONG=1` the
//! 100,000-edit, 10,000-file case whose figures `docs/viz.md` gives. Skips
//! without Chromium like the browser test (fails under CI).
#![allow(clippy::unwrap_used)] // tests may unwrap

use headless_chrome::{Browser, LaunchOptions};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Instant;
use strata::events::{Event, EventRecord, TableInfo, FORMAT_VERSION};
use strata::inspect::{self, ManifestEdit, ManifestHistory, Tree};

fn key(i: u64) -> Vec<u8> {
    let mut k = b"k".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

struct Gen {
    rng: StdRng,
    next: u64,
    seq: u64,
    time: f64,
    edits: Vec<ManifestEdit>,
    events: Vec<EventRecord>,
    /// L6 as sorted, disjoint (lo, hi, file) over 0..space.
    l6: Vec<(u64, u64, TableInfo)>,
    l0: Vec<TableInfo>,
    space: u64,
}

impl Gen {
    fn file(&mut self, level: usize, lo: u64, hi: u64, size: u64) -> TableInfo {
        self.next += 1;
        self.seq += 100;
        TableInfo {
            level,
            number: self.next,
            size,
            smallest: key(lo),
            largest: key(hi),
            largest_exclusive: false,
            smallest_seq: self.seq - 99,
            largest_seq: self.seq,
            entries: Some(size / 100),
            backing: None,
        }
    }

    fn push(&mut self, added: Vec<TableInfo>, removed: Vec<TableInfo>, event: Event) {
        self.time += 0.05;
        self.edits.push(ManifestEdit {
            offset: self.edits.len() as u64,
            added,
            removed: removed.iter().map(|f| (f.level, f.number)).collect(),
            queued: vec![],
            last_sequence: Some(self.seq),
            next_file_number: Some(self.next + 1),
        });
        self.events.push(EventRecord {
            v: FORMAT_VERSION,
            time: self.time,
            event,
        });
    }

    fn flush(&mut self, job: u64) {
        let n = self.rng.gen_range(1..=3);
        let mut out = Vec::new();
        for _ in 0..n {
            let w = self.space / self.rng.gen_range(2000..6000);
            let lo = self.rng.gen_range(0..self.space - w);
            let size = self.rng.gen_range(200_000..2_000_000);
            out.push(self.file(0, lo, lo + w, size));
        }
        self.l0.extend(out.iter().cloned());
        let bytes = out.iter().map(|f| f.size).sum();
        self.push(
            out.clone(),
            vec![],
            Event::FlushEnd {
                job,
                memtable: job,
                outputs: out,
                bytes_written: bytes,
                micros: 20_000,
            },
        );
    }

    /// Compacts the oldest L0 file and every L0 file and L6 file it
    /// overlaps into new L6 files over the same L6 range.
    fn compact(&mut self, job: u64) {
        let Some(first) = self.l0.first().cloned() else {
            return;
        };
        let span = |f: &TableInfo| {
            (
                u64::from_be_bytes(f.smallest[1..].try_into().unwrap()),
                u64::from_be_bytes(f.largest[1..].try_into().unwrap()),
            )
        };
        let (lo, hi) = span(&first);
        let (i0, i1) = (
            self.l6.partition_point(|x| x.1 < lo),
            self.l6.partition_point(|x| x.0 <= hi),
        );
        let (lo, hi) = (self.l6[i0].0, self.l6[i1 - 1].1);
        let l0_in: Vec<TableInfo> = self
            .l0
            .iter()
            .filter(|f| {
                let (a, b) = span(f);
                a >= lo && b <= hi
            })
            .cloned()
            .collect();
        self.l0
            .retain(|f| !l0_in.iter().any(|g| g.number == f.number));
        let l6_in: Vec<(u64, u64, TableInfo)> = self.l6.drain(i0..i1).collect();
        let mut inputs: Vec<TableInfo> = l0_in.clone();
        inputs.extend(l6_in.iter().map(|x| x.2.clone()));
        let mut outs = Vec::new();
        let mut new_l6 = Vec::new();
        for (a, b, old) in &l6_in {
            let f = self.file(6, *a, *b, old.size + 50_000);
            new_l6.push((*a, *b, f.clone()));
            outs.push(f);
        }
        let _ = (lo, hi);
        self.l6.splice(i0..i0, new_l6);
        let read: u64 = inputs.iter().map(|f| f.size).sum();
        let written: u64 = outs.iter().map(|f| f.size).sum();
        self.push(
            outs.clone(),
            inputs.clone(),
            Event::CompactionEnd {
                job,
                reason: "l0".into(),
                start_level: 0,
                output_level: 6,
                moved: false,
                cancelled: false,
                inputs,
                outputs: outs,
                bytes_read: read,
                bytes_written: written,
                micros: 900_000,
            },
        );
    }
}

fn synthetic(steps: usize, l6_files: u64) -> (ManifestHistory, Vec<EventRecord>) {
    let space = l6_files * 1_000_000;
    let mut g = Gen {
        rng: StdRng::seed_from_u64(7),
        next: 0,
        seq: 0,
        time: 1_800_000_000.0,
        edits: vec![],
        events: vec![],
        l6: vec![],
        l0: vec![],
        space,
    };
    let mut files = Vec::new();
    for i in 0..l6_files {
        let f = g.file(6, i * 1_000_000, i * 1_000_000 + 999_999, 4 << 20);
        g.l6.push((i * 1_000_000, i * 1_000_000 + 999_999, f.clone()));
        files.push(f);
    }
    g.push(files.clone(), vec![], Event::Open { files });
    let mut job = 0;
    while g.edits.len() < steps {
        job += 1;
        // Keep L0 around 20-60 files.
        if g.l0.len() > 20 && (g.rng.gen_bool(0.5) || g.l0.len() > 60) {
            g.compact(job);
        } else {
            g.flush(job);
        }
    }
    (
        ManifestHistory {
            path: PathBuf::from("synthetic/MANIFEST-000001"),
            edits: g.edits,
        },
        g.events,
    )
}

#[test]
fn large_history_stays_responsive() {
    let long = std::env::var("STRATA_LONG").as_deref() == Ok("1");
    let (steps, l6) = if long {
        (100_000, 9_960)
    } else {
        (3_000, 1_000)
    };
    let t = Instant::now();
    let (m, events) = synthetic(steps, l6);
    let h = strata_viz::history::build(&m, &events, vec![]).unwrap();
    let built = t.elapsed();
    let t = Instant::now();
    let html = strata_viz::html::render(&h, "synthetic");
    let rendered = t.elapsed();
    assert_eq!(h.steps.len(), steps);
    assert!(
        h.steps
            .iter()
            .all(|s| s.kind != strata_viz::history::StepKind::Edit),
        "every edit matched its event"
    );
    // The replayed trees at some steps, to compare with the page.
    let probes: Vec<usize> = vec![
        steps - 1,
        0,
        steps / 2 + 7,
        513,
        steps / 3,
        1,
        steps - 600,
        1025,
    ];
    let mut tree = Tree::new();
    let mut want = std::collections::HashMap::new();
    let mut peak_files = 0;
    for (i, e) in m.edits.iter().enumerate() {
        tree.apply(e).unwrap();
        peak_files = peak_files.max(tree.num_files());
        if probes.contains(&i) {
            let sub = inspect::l0_sublevels(tree.files(0)).num_sublevels;
            want.insert(i, (tree.num_files(), tree.files(0).len(), sub));
        }
    }
    let placements = h.placements.len();
    eprintln!(
        "synthetic: {steps} steps, peak {peak_files} live files, {placements} placements; \
         history built in {built:?}, page rendered in {rendered:?}, {} bytes",
        html.len()
    );

    let d = tempfile::tempdir().unwrap();
    let page = d.path().join("scale.html");
    std::fs::write(&page, &html).unwrap();
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    let Some(path) = chromium else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("Chromium is missing under CI: test.sh installs it (apt-get install chromium)");
        }
        eprintln!("SKIPPED: Chromium not found; install it with `sudo apt-get install chromium`");
        return;
    };
    let args: Vec<&OsStr> = [
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let browser = Browser::new(
        LaunchOptions::default_builder()
            .path(Some(path))
            .headless(true)
            .sandbox(false)
            .window_size(Some((1600, 1000)))
            .user_data_dir(Some(d.path().join("profile")))
            .args(args)
            .idle_browser_timeout(std::time::Duration::from_secs(300))
            .build()
            .unwrap(),
    )
    .unwrap();
    let tab = browser.new_tab().unwrap();
    let t = Instant::now();
    tab.navigate_to(&format!("file://{}", page.display()))
        .unwrap();
    tab.wait_for_element_with_custom_timeout(
        "body[data-ready='1']",
        std::time::Duration::from_secs(240),
    )
    .unwrap();
    let wall = t.elapsed();
    let eval = |js: &str| tab.evaluate(js, false).unwrap().value.unwrap();
    let load_ms = eval("strataViz.loadMillis").as_f64().unwrap();
    let mut step_ms = Vec::new();
    for &s in &probes {
        let r = eval(&format!(
            "(() => {{ const t = performance.now(); strataViz.show({s}); return performance.now() - t; }})()"
        ));
        step_ms.push(r.as_f64().unwrap());
        let num = |id: &str| -> usize {
            eval(&format!("document.getElementById('{id}').textContent"))
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        };
        let (files, l0, sub) = want[&s];
        assert_eq!(num("st-files"), files, "files at step {s}");
        assert_eq!(num("st-l0"), l0, "L0 files at step {s}");
        assert_eq!(num("st-sub"), sub, "L0 sublevels at step {s}");
    }
    // Single steps forward, the common case while playing.
    let single = eval(
        "(() => { strataViz.show(1000); const t = performance.now(); for (let i = 0; i < 100; i++) strataViz.show(1001 + i); return (performance.now() - t) / 100; })()",
    )
    .as_f64()
    .unwrap();
    eprintln!(
        "browser: page ready in {wall:?} (script {load_ms:.0} ms after parse); \
         jump to a step and draw: {:.1}-{:.1} ms; one step forward and draw: {single:.1} ms",
        step_ms.iter().cloned().fold(f64::MAX, f64::min),
        step_ms.iter().cloned().fold(0.0, f64::max)
    );
}
