//! `strata sst ...`: dump, verify and write single SST files. A table
//! whose footer declares no checksum is read (these commands look at one
//! file, not a database), and the output says nothing in it was verified.

use crate::gen;
use crate::hex;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use strata::sstable::{CompressionType, SstOptions, SstWriter, TableFile};
use strata::ChecksumType;

#[derive(Subcommand)]
pub enum SstCmd {
    /// Print a table's properties, then its entries.
    Dump(DumpArgs),
    /// Read every block, checking checksums, order and counts.
    Verify {
        /// The SST file.
        file: PathBuf,
    },
    /// Write a table of generated keys (test data).
    Write(WriteArgs),
}

#[derive(Args)]
pub struct DumpArgs {
    /// The SST file.
    file: PathBuf,
    /// Print keys and values as uppercase hex, as `sst_dump --output_hex` does.
    #[arg(long)]
    hex: bool,
    /// Print block, filter and compression figures.
    #[arg(long)]
    stats: bool,
    /// Only properties (and stats), no entries.
    #[arg(long)]
    no_entries: bool,
    /// Print at most this many entries.
    #[arg(long)]
    limit: Option<u64>,
}

#[derive(Args)]
pub struct WriteArgs {
    /// The SST file to write (replaced if it exists).
    out: PathBuf,
    /// Number of entries (generated keys, in increasing order).
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// none, snappy, lz4 or zstd
    #[arg(long, default_value = "snappy")]
    compression: String,
    /// Target data block size in bytes.
    #[arg(long, default_value_t = 4096)]
    block_size: usize,
    /// Bloom filter bits per key; 0 for no filter.
    #[arg(long, default_value_t = 10.0)]
    bloom_bits: f64,
    /// crc32c or xxh3
    #[arg(long, default_value = "crc32c")]
    checksum: String,
    /// Seed of the generated keys and values.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(cmd: SstCmd) -> Result<()> {
    match cmd {
        SstCmd::Dump(a) => dump(a),
        SstCmd::Verify { file } => verify(&file),
        SstCmd::Write(a) => write(a),
    }
}

fn show(b: &[u8], as_hex: bool) -> String {
    if as_hex {
        hex::encode(b).to_uppercase()
    } else {
        hex::escape(b)
    }
}

fn dump(a: DumpArgs) -> Result<()> {
    // The engine's errors name the file (and the offset, for damage).
    let t = TableFile::open(&a.file)?;
    let mut out = BufWriter::new(crate::stdout::lock());
    writeln!(out, "Table: {} ({} bytes)", a.file.display(), t.file_size())?;
    writeln!(
        out,
        "Footer: format_version {}, checksum {}{}",
        t.format_version(),
        t.checksum().name(),
        no_checksums_note(&t)
    )?;
    writeln!(out, "Properties:")?;
    for (k, v) in &t.properties().all {
        writeln!(out, "  {k} = {}", TableFile::display_property(k, v))?;
    }
    if let Some(s) = t.global_seqno() {
        writeln!(out, "Global sequence number: {s}")?;
    }
    if let Some(e) = t.filter_error() {
        writeln!(out, "Filter: unreadable, ignored ({e})")?;
    }
    if a.stats {
        let s = t.verify()?;
        writeln!(out, "Stats:")?;
        writeln!(out, "  data blocks: {}", s.data_blocks)?;
        writeln!(out, "  entries: {}", s.entries)?;
        writeln!(
            out,
            "  data bytes: {} raw, {} stored ({:.3} ratio)",
            s.data_raw_bytes,
            s.data_stored_bytes,
            s.data_stored_bytes as f64 / s.data_raw_bytes.max(1) as f64
        )?;
        if let Some(avg) = s.data_raw_bytes.checked_div(s.data_blocks) {
            writeln!(
                out,
                "  average block: {avg} raw bytes, {:.1} entries",
                s.entries as f64 / s.data_blocks as f64
            )?;
        }
        for (c, n) in &s.blocks_by_compression {
            writeln!(out, "  blocks stored as {}: {n}", c.rocksdb_name())?;
        }
        writeln!(out, "  index block: {} bytes", s.index_bytes)?;
        match s.filter_probes {
            Some(p) => writeln!(
                out,
                "  filter: {} bytes, {p} probes, {:.2} bits/key",
                s.filter_bytes,
                s.filter_bytes as f64 * 8.0 / s.entries.max(1) as f64
            )?,
            None => writeln!(
                out,
                "  filter: {}",
                if t.has_filter() { "present" } else { "none" }
            )?,
        }
    }
    if !a.no_entries {
        for r in t.range_tombstones() {
            writeln!(
                out,
                "Range tombstone: [{}, {}) seq:{}",
                show(&r.start, a.hex),
                show(&r.end, a.hex),
                r.seq
            )?;
        }
        writeln!(out, "Entries:")?;
        let limit = a.limit.unwrap_or(u64::MAX);
        for e in t
            .entries()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
        {
            let e = e?;
            // The same line shape as `sst_dump --command=scan`.
            writeln!(
                out,
                "'{}' seq:{}, type:{} => {}",
                show(&e.user_key, a.hex),
                e.seq,
                e.kind,
                show(&e.value, a.hex)
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

fn verify(file: &Path) -> Result<()> {
    let t = TableFile::open(file)?;
    let s = t.verify()?;
    outln!(
        "OK {}: {} entries in {} data blocks, {} range tombstones{}",
        file.display(),
        s.entries,
        s.data_blocks,
        t.range_tombstones().len(),
        no_checksums_note(&t)
    )?;
    Ok(())
}

/// What to add where a table's footer is shown: these commands read a
/// table whose footer declares no block checksum (a database refuses one
/// unless it writes such tables itself), so they say nothing was verified.
fn no_checksums_note(t: &TableFile) -> &'static str {
    if !t.has_checksums() {
        " (the table has no checksums: nothing read from it is verified; a database \
         that writes checksummed tables refuses it)"
    } else {
        ""
    }
}

pub fn options(
    compression: &str,
    block_size: usize,
    bloom_bits: f64,
    checksum: &str,
) -> Result<SstOptions> {
    let Some(compression) = CompressionType::parse(compression) else {
        bail!("unknown compression {compression:?} (none, snappy, lz4, zstd)");
    };
    let checksum = match checksum {
        "crc32c" => ChecksumType::Crc32c,
        "xxh3" => ChecksumType::Xxh3,
        other => bail!("unknown checksum {other:?} (crc32c, xxh3)"),
    };
    Ok(SstOptions {
        block_size,
        compression,
        checksum,
        bloom_bits_per_key: (bloom_bits > 0.0).then_some(bloom_bits),
        ..SstOptions::for_ingestion()
    })
}

/// The largest `--value-size`: a generated value is built in memory whole.
const MAX_VALUE_SIZE: usize = 1 << 30;

fn write(a: WriteArgs) -> Result<()> {
    if a.value_size > MAX_VALUE_SIZE {
        bail!(
            "--value-size {}: at most {MAX_VALUE_SIZE} bytes (1 GiB)",
            a.value_size
        );
    }
    let opts = options(&a.compression, a.block_size, a.bloom_bits, &a.checksum)?;
    if a.out.is_dir() {
        bail!("{} is a directory, not an SST file", a.out.display());
    }
    let start = Instant::now();
    // Written under a temporary name beside the output and renamed over it
    // once whole: a write that fails (a full disk) leaves no partial table
    // behind, and a table already at the path stays as it was.
    let name = a
        .out
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = a
        .out
        .with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = (|| -> Result<strata::SstInfo> {
        let mut w = SstWriter::create(&tmp, opts)?;
        let mut rng = gen::rng(a.seed);
        for i in 0..a.keys {
            w.put(gen::key(i), gen::value(&mut rng, a.value_size))?;
        }
        Ok(w.finish()?)
    })()
    .and_then(|info| {
        std::fs::rename(&tmp, &a.out)
            .with_context(|| format!("renaming {} to {}", tmp.display(), a.out.display()))?;
        Ok(info)
    });
    let info = match written {
        Ok(info) => info,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    let secs = start.elapsed().as_secs_f64();
    outln!(
        "wrote {}: {} entries, {} bytes in {:.3}s",
        a.out.display(),
        info.num_entries,
        info.file_size,
        secs
    )?;
    Ok(())
}
