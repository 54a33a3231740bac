//! The LSM visualiser: a Strata database's history, replayed from its
//! MANIFEST (every version edit) and its `EVENTS` log, as one self-contained
//! HTML page ([`render_page`]) or as a text chart of the current tree
//! ([`text::ascii_chart`], used by `strata lsm`).
//!
//! Uses only the engine's public, read-only API (`strata::inspect`,
//! `strata::events`): it never opens the database or writes to its
//! directory, so it works on a closed database and beside a live one.
//!
//! - [`history`]: steps (tree-changing edits) matched to the events that
//!   made them, with the figures charted per step;
//! - [`html`]: the page (canvas drawing, compact columnar data);
//! - [`text`]: the ASCII chart and the wide-but-small rule.

pub mod history;
pub mod html;
pub mod text;

use std::path::Path;

/// Reads the database at `dir` and renders its history as HTML.
pub fn render_page(dir: &Path) -> strata::Result<String> {
    let h = history::load(dir)?;
    Ok(html::render(&h, &dir.display().to_string()))
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
    Ok(text::ascii_chart(&tree, width))
}
