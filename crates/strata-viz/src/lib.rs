//! The LSM visualiser: a Strata database's history, replayed from its
//! MANIFEST (every version edit) and its `EVENTS` log, as one self-contained
//! HTML page ([`render_page`]) or as a text chart of the current tree
//! ([`text::ascii_chart`], used by `strata lsm`).
//!
//! Uses only the engine's public, read-only API (`strata::inspect`,
//! `strata::events`, and a read-only open for the import catalog when the
//! tree holds table keys): it never writes to the database directory, so
//! it works on a closed database and beside a live one.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = strata::Db::open_default(dir.path())?;
//! db.put("apple", "red")?;
//! db.flush()?;
//! db.close()?;
//! // The page: one self-contained HTML file.
//! let page = strata_viz::render_page(dir.path())?;
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! // The same tree as text (what `strata lsm` prints).
//! let chart = strata_viz::text_chart(dir.path(), 40)?;
//! assert!(chart.contains("L0"));
//! # Ok(())
//! # }
//! ```
//!
//! - [`history`]: steps (changes to the tree, and checkpoints) across
//!   every open the logs remember, matched to the events that made them,
//!   with the figures charted per step;
//! - [`catalog`]: table and index names for the key axis, from the import
//!   catalog;
//! - [`html`]: the page (canvas drawing, compact columnar data);
//! - [`text`]: the ASCII chart and the wide-but-small rule.

pub mod catalog;
pub mod history;
pub mod html;
pub mod text;

use std::path::Path;

/// Reads the database at `dir` and renders its history as HTML, with the
/// import catalog's table and index names over the key axis when it has
/// tables. Writes nothing to `dir`.
pub fn render_page(dir: &Path) -> strata::Result<String> {
    let mut h = history::load(dir)?;
    let mut bands = Vec::new();
    let mut decoded = Vec::new();
    if catalog::has_table_keys(&h.keys) {
        match catalog::read(dir) {
            Ok(entries) => {
                bands = catalog::ranks(&catalog::bands_of(&entries), &h.keys);
                decoded = catalog::decode_keys(&entries, &h.keys);
            }
            Err(e) => h.notes.push(format!("no table names on the key axis: {e}")),
        }
    }
    Ok(html::render_catalogued(
        &h,
        &dir.display().to_string(),
        &bands,
        &decoded,
    ))
}

/// The text chart of the tree the MANIFEST of `dir` describes now.
pub fn text_chart(dir: &Path, width: usize) -> strata::Result<String> {
    let m = strata::inspect::read_manifest(dir)?;
    let mut tree = strata::inspect::Tree::new();
    for e in &m.edits {
        tree.apply(e).map_err(|msg| {
            strata::Error::corruption(m.path.display().to_string(), e.offset, msg)
        })?;
    }
    // A SQL table's keys read as its index and column values, as on the
    // page; when the catalog cannot be read, as raw keys.
    let bounds: Vec<Vec<u8>> = (0..strata::inspect::LEVELS)
        .flat_map(|l| tree.files(l).iter())
        .flat_map(|f| [f.smallest.clone(), f.largest.clone()])
        .collect();
    let entries = if catalog::has_table_keys(&bounds) {
        catalog::read(dir).ok()
    } else {
        None
    };
    let label = |k: &[u8]| -> String {
        let decoded = entries
            .as_ref()
            .map(|e| catalog::decode_keys(e, &[k.to_vec()]).remove(0))
            .unwrap_or_default();
        if !decoded.is_empty() {
            decoded
        } else if catalog::is_system_key(k) {
            format!("(system) {}", text::display_key(&k[1..]))
        } else {
            text::display_key(k)
        }
    };
    Ok(text::ascii_chart_labelled(&tree, width, &label))
}
