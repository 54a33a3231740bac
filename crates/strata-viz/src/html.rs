//! The page: one self-contained HTML file (styles, script and data inline,
//! nothing fetched) that draws a [`History`] on a canvas.
//!
//! The data is embedded as one JSON object in columns, so 100,000 steps and
//! hundreds of thousands of file placements stay a few megabytes and parse
//! fast: file numbers, birth steps and sequence numbers are delta-coded;
//! keys appear once, as their rank on the x axis; each step lists only the
//! placements it removed and the sublevels that changed (the placements it
//! added are the next ones in order). The script replays the steps once at
//! load, keeping a checkpoint of the live files every 512 steps, so moving
//! the timeline to any step applies at most 512 steps' changes.

use crate::history::History;
use serde::Serialize;
use std::collections::HashMap;

const TEMPLATE: &str = include_str!("page.html");

#[derive(Serialize)]
struct Placements {
    num: Vec<i64>,
    lvl: Vec<u8>,
    lo: Vec<u32>,
    hi: Vec<u32>,
    /// Placements whose largest key is exclusive (rare: sparse).
    ex: Vec<u32>,
    size: Vec<u64>,
    ent: Vec<i64>,
    lseq: Vec<i64>,
    sspan: Vec<u64>,
    born: Vec<i64>,
}

#[derive(Serialize)]
struct Steps {
    kind: Vec<u8>,
    add: Vec<u32>,
    rem: Vec<u32>,
    sl: Vec<u32>,
    #[serde(rename = "remIds")]
    rem_ids: Vec<u32>,
    #[serde(rename = "slIds")]
    sl_ids: Vec<u32>,
    #[serde(rename = "slVals")]
    sl_vals: Vec<u32>,
    job: Vec<u64>,
    reason: Vec<u32>,
    slv: Vec<u8>,
    olv: Vec<u8>,
    br: Vec<u64>,
    bw: Vec<u64>,
    us: Vec<u64>,
    stc: Vec<u64>,
    stu: Vec<u64>,
    /// Milliseconds since the previous step with a time.
    dt: Vec<i64>,
    l0s: Vec<u32>,
    ra: Vec<u32>,
    /// Import phases that ended before a step: (step, text), sparse.
    imp: Vec<(u32, String)>,
    /// Checkpoint steps' copies: (step, directory, tables, bytes, linked,
    /// copied), sparse.
    cp: Vec<(u32, String, usize, u64, usize, usize)>,
}

#[derive(Serialize)]
struct Data<'a> {
    dir: &'a str,
    manifest: &'a str,
    notes: &'a [String],
    bookkeeping: usize,
    /// The first step from the current MANIFEST (earlier ones are from
    /// the EVENTS log of earlier sessions).
    #[serde(rename = "manifestStart")]
    manifest_start: usize,
    reasons: Vec<String>,
    keys: Vec<String>,
    /// Table and index names over the key axis: (label, first rank, last
    /// rank).
    bands: &'a [(String, usize, usize)],
    /// Each key decoded under the catalog (`""`: not a table key), or
    /// empty.
    decoded: &'a [String],
    p: Placements,
    s: Steps,
}

/// Renders `h` (of the database at `dir`) as the page's HTML.
pub fn render(h: &History, dir: &str) -> String {
    render_labelled(h, dir, &[])
}

/// [`render`] with labelled bands over the key axis: (label, first rank,
/// last rank) in [`History::keys`] (see [`crate::catalog::ranks`]).
pub fn render_labelled(h: &History, dir: &str, bands: &[(String, usize, usize)]) -> String {
    render_catalogued(h, dir, bands, &[])
}

/// [`render_labelled`] with every key of [`History::keys`] decoded under
/// the catalog (`decoded[i]` for `keys[i]`, `""` where it is not a table
/// key; see [`crate::catalog::decode_keys`]), shown in the file details.
pub fn render_catalogued(
    h: &History,
    dir: &str,
    bands: &[(String, usize, usize)],
    decoded: &[String],
) -> String {
    let rank: HashMap<&[u8], u32> = h
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_slice(), i as u32))
        .collect();
    let n = h.placements.len();
    let mut p = Placements {
        num: Vec::with_capacity(n),
        lvl: Vec::with_capacity(n),
        lo: Vec::with_capacity(n),
        hi: Vec::with_capacity(n),
        ex: Vec::new(),
        size: Vec::with_capacity(n),
        ent: Vec::with_capacity(n),
        lseq: Vec::with_capacity(n),
        sspan: Vec::with_capacity(n),
        born: Vec::with_capacity(n),
    };
    let (mut last_num, mut last_seq, mut last_born) = (0i64, 0i64, 0i64);
    for pl in &h.placements {
        let f = &pl.file;
        p.num.push(f.number as i64 - last_num);
        last_num = f.number as i64;
        p.lvl.push(f.level as u8);
        p.lo.push(rank[f.smallest.as_slice()]);
        p.hi.push(rank[f.largest.as_slice()]);
        if f.largest_exclusive {
            p.ex.push(p.lvl.len() as u32 - 1);
        }
        p.size.push(f.size);
        p.ent.push(f.entries.map(|e| e as i64).unwrap_or(-1));
        p.lseq.push(f.largest_seq as i64 - last_seq);
        last_seq = f.largest_seq as i64;
        p.sspan.push(f.largest_seq.saturating_sub(f.smallest_seq));
        p.born.push(pl.born as i64 - last_born);
        last_born = pl.born as i64;
    }
    let mut reasons: Vec<String> = Vec::new();
    let mut reason_ix: HashMap<String, u32> = HashMap::new();
    let m = h.steps.len();
    let mut s = Steps {
        kind: Vec::with_capacity(m),
        add: Vec::with_capacity(m),
        rem: Vec::with_capacity(m),
        sl: Vec::with_capacity(m),
        rem_ids: Vec::new(),
        sl_ids: Vec::new(),
        sl_vals: Vec::new(),
        job: Vec::with_capacity(m),
        reason: Vec::with_capacity(m),
        slv: Vec::with_capacity(m),
        olv: Vec::with_capacity(m),
        br: Vec::with_capacity(m),
        bw: Vec::with_capacity(m),
        us: Vec::with_capacity(m),
        stc: Vec::with_capacity(m),
        stu: Vec::with_capacity(m),
        dt: Vec::with_capacity(m),
        l0s: Vec::with_capacity(m),
        ra: Vec::with_capacity(m),
        imp: Vec::new(),
        cp: Vec::new(),
    };
    let t0 = h.steps.iter().map(|s| s.time).find(|&t| t > 0.0);
    let mut last_ms = 0i64;
    for st in &h.steps {
        s.kind.push(st.kind as u8);
        s.add.push(st.added.len() as u32);
        s.rem.push(st.removed.len() as u32);
        s.rem_ids.extend(st.removed.iter().map(|&i| i as u32));
        s.sl.push(st.sublevel_changes.len() as u32);
        for &(pl, sub) in &st.sublevel_changes {
            s.sl_ids.push(pl as u32);
            s.sl_vals.push(sub as u32);
        }
        s.job.push(st.job);
        let next = reasons.len() as u32;
        let r = *reason_ix.entry(st.reason.clone()).or_insert_with(|| {
            reasons.push(st.reason.clone());
            next
        });
        s.reason.push(r);
        s.slv.push(st.start_level as u8);
        s.olv.push(st.output_level as u8);
        s.br.push(st.bytes_read);
        s.bw.push(st.bytes_written);
        s.us.push(st.micros);
        s.stc.push(st.stalls.0);
        s.stu.push(st.stalls.1);
        let ms = match (t0, st.time > 0.0) {
            (Some(t0), true) => ((st.time - t0) * 1000.0).round() as i64,
            _ => last_ms,
        };
        s.dt.push(ms - last_ms);
        last_ms = ms;
        s.l0s.push(st.l0_sublevels as u32);
        s.ra.push(st.read_amp as u32);
        let at = s.ra.len() as u32 - 1;
        s.imp.extend(st.imports.iter().map(|t| (at, t.clone())));
        if let Some(c) = &st.checkpoint {
            s.cp.push((at, c.dir.clone(), c.tables, c.bytes, c.linked, c.copied));
        }
    }
    let data = Data {
        dir,
        manifest: &h.manifest,
        notes: &h.notes,
        bookkeeping: h.bookkeeping_edits,
        manifest_start: h.manifest_start,
        reasons,
        keys: h.keys.iter().map(|k| crate::text::display_key(k)).collect(),
        bands,
        decoded,
        p,
        s,
    };
    // Plain structs of numbers and strings: serialising cannot fail.
    let json = serde_json::to_string(&data).unwrap_or_default();
    // Inside <script>, "</" could end the element early.
    let json = json.replace("</", "<\\/");
    let title = format!("Strata LSM: {}", html_escape(dir));
    TEMPLATE
        .replacen("__TITLE__", &title, 1)
        .replacen("__DATA__", &json, 1)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
