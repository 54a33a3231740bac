//! `strata viz DB -o lsm.html`: the LSM visualiser's page for a database
//! (see the `strata-viz` crate): its history across every open the logs
//! remember. Reads the database directory only (and opens it read-only,
//! which writes nothing, for the import catalog's table names), so it works
//! on a closed one and beside a live one. `-o -` writes the page to standard
//! output (the convention users expect; a file named `-` is `-o ./-`), and
//! then nothing else goes there, so `strata viz DB -o - > page.html` or a
//! pipe gets the page alone.

use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct VizArgs {
    /// The database directory.
    pub db: PathBuf,
    /// Where to write the page; `-` writes it to standard output (a file
    /// named `-` is `./-`).
    #[arg(short, long, default_value = "lsm.html")]
    pub output: PathBuf,
}

pub fn run(a: VizArgs) -> Result<()> {
    let to_stdout = a.output.as_os_str() == "-";
    // The page's directory, resolved (the page itself may not exist yet).
    let parent = match a.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let out_dir = parent.canonicalize().unwrap_or(parent);
    let db = a.db.canonicalize().unwrap_or(a.db.clone());
    if !to_stdout && out_dir.starts_with(&db) {
        anyhow::bail!(
            "{} is inside the database directory; write the page elsewhere",
            a.output.display()
        );
    }
    // What is no database at all (nothing there, a file, no CURRENT) is
    // refused by the reader in the words the other commands use, and
    // needs no more words here.
    let page = strata_viz::render_page(&a.db).map_err(|e| {
        let not_found = e.is_not_found();
        let e = anyhow::Error::new(e);
        if not_found {
            e
        } else {
            e.context(format!("reading the history of {}", a.db.display()))
        }
    })?;
    if to_stdout {
        // The page alone: no "wrote" line after it.
        let mut out = crate::stdout::lock();
        out.write_all(page.as_bytes())?;
        out.flush()?;
        return Ok(());
    }
    std::fs::write(&a.output, &page).with_context(|| format!("writing {}", a.output.display()))?;
    outln!(
        "wrote {} ({} bytes); open it in a browser",
        a.output.display(),
        page.len()
    )?;
    Ok(())
}

/// The text chart for `strata lsm`, read from the MANIFEST before the
/// database is opened.
pub fn text_chart(db: &Path) -> Result<String> {
    strata_viz::text_chart(db, 72).with_context(|| format!("reading {}", db.display()))
}
