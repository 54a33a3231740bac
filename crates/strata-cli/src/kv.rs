//! `get`, `put`, `delete`: one key at a time (writes are synced).

use crate::codec::{self, Format};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use strata::{Options, WriteBatch, WriteOptions};

#[derive(Args)]
pub struct KeyArgs {
    /// Database directory (must exist).
    pub db: PathBuf,
    /// The key, escaped text (`\n`, `\xHH`, `\\`) or hex with --hex.
    pub key: String,
    /// Keys and values are hex (`0x...` optional).
    #[arg(long)]
    pub hex: bool,
}

#[derive(Args)]
pub struct PutArgs {
    /// Database directory (created if missing).
    pub db: PathBuf,
    /// The key, escaped text or hex with --hex.
    pub key: String,
    /// The value, escaped text or hex with --hex.
    pub value: String,
    /// Keys and values are hex (`0x...` optional).
    #[arg(long)]
    pub hex: bool,
}

fn format(hex: bool) -> Format {
    if hex {
        Format::Hex
    } else {
        Format::Text
    }
}

pub fn get(a: KeyArgs) -> Result<()> {
    let f = format(a.hex);
    let key = codec::parse(&a.key, f)?;
    let db = crate::open::read_only(&a.db)?;
    match db.get(&key)? {
        Some(v) => outln!("{}", codec::show(&v, f))?,
        // Shown as the output shows keys (`0x…` under --hex), whatever
        // spelling was typed.
        None => bail!("key {} not found", codec::show(&key, f)),
    }
    Ok(())
}

pub fn put(a: PutArgs) -> Result<()> {
    let f = format(a.hex);
    let (k, v) = (codec::parse(&a.key, f)?, codec::parse(&a.value, f)?);
    let db = crate::open::or_create(&a.db, Options::default())?;
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write(b, &WriteOptions { sync: true })?;
    db.close()?;
    Ok(())
}

pub fn delete(a: KeyArgs) -> Result<()> {
    let key = codec::parse(&a.key, format(a.hex))?;
    let db = crate::open::existing(&a.db)?;
    let mut b = WriteBatch::new();
    b.delete(key);
    db.write(b, &WriteOptions { sync: true })?;
    db.close()?;
    Ok(())
}
