//! `scan` and `dump`: entries in key order, one line each, in the formats
//! of `codec` (escaped text, `--hex`, `--json`). `dump` is `scan` of
//! everything (the name `ldb` users know); both print the same lines, which
//! `load` reads back.

use crate::codec::{self, Format};
use anyhow::{bail, Result};
use clap::Args;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use strata::ReadOptions;

#[derive(Args)]
pub struct ScanArgs {
    /// Database directory (must exist).
    pub db: PathBuf,
    /// First key (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// Last key (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Only keys starting with this (combines with --from / --to).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Largest key first (descending key order).
    #[arg(long)]
    pub reverse: bool,
    /// Print at most this many entries.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Print only the number of entries.
    #[arg(long)]
    pub count: bool,
    #[command(flatten)]
    pub out: OutArgs,
}

/// The output format flags shared by `scan` and `dump`.
#[derive(Args)]
pub struct OutArgs {
    /// Keys and values in hex (`0xKEY ==> 0xVALUE`, as `ldb --hex`).
    #[arg(long)]
    pub hex: bool,
    /// One JSON object per line (`{"key":..,"value":..}`; a key or value
    /// that is not UTF-8 is given as `key_hex` or `value_hex` instead).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct DumpArgs {
    /// Database directory (must exist).
    pub db: PathBuf,
    #[command(flatten)]
    pub out: OutArgs,
}

pub fn dump(a: DumpArgs) -> Result<()> {
    scan(ScanArgs {
        db: a.db,
        from: None,
        to: None,
        prefix: None,
        reverse: false,
        limit: None,
        count: false,
        out: a.out,
    })
}

/// The smallest key greater than every key starting with `p` (`None`: no
/// such bound).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

pub fn scan(a: ScanArgs) -> Result<()> {
    let format = Format::from_flags(a.out.hex, a.out.json)?;
    // Bounds given on the command line are in the input form of the format
    // (hex with --hex, escaped text otherwise).
    let input = if format == Format::Hex {
        Format::Hex
    } else {
        Format::Text
    };
    let parse = |s: &Option<String>| s.as_deref().map(|s| codec::parse(s, input)).transpose();
    let (mut lower, mut upper) = (parse(&a.from)?, parse(&a.to)?);
    if let Some(p) = parse(&a.prefix)? {
        if lower.as_ref().is_none_or(|l| *l < p) {
            lower = Some(p.clone());
        }
        if let Some(end) = prefix_end(&p) {
            if upper.as_ref().is_none_or(|u| *u > end) {
                upper = Some(end);
            }
        }
    }
    if a.count && a.out.json {
        bail!("--count prints a number; --json does not apply");
    }
    let db = crate::open::read_only(&a.db)?;
    let it = db.iter_opt(&ReadOptions {
        lower,
        upper,
        ..ReadOptions::default()
    });
    let it: Box<dyn Iterator<Item = strata::Result<strata::KvPair>>> = if a.reverse {
        Box::new(it.rev())
    } else {
        Box::new(it)
    };
    let it = it.take(a.limit.map_or(usize::MAX, |l| l as usize));
    let mut out = BufWriter::new(crate::stdout::lock());
    let mut n = 0u64;
    for kv in it {
        let (k, v) = kv?;
        n += 1;
        if !a.count {
            writeln!(out, "{}", codec::line(&k, &v, format))?;
        }
    }
    if a.count {
        writeln!(out, "{n}")?;
    }
    out.flush()?;
    Ok(())
}
