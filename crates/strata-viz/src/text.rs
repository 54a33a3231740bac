//! The text view of a tree for `strata lsm`: one line per L0 sublevel (the
//! newest on top) and per non-empty level, each file drawn over its key
//! range as `[====]` (`|` when it fits one column), wide-but-small files as
//! `[####]` and listed below the chart.
//!
//! Keys are placed by their order among the tree's file bounds (as on the
//! page), so a dense part of the key space gets as many columns as a sparse
//! one with as many bounds.

use strata::inspect::{self, TableInfo, Tree, LEVELS};

/// A file spanning at least this fraction of the key space whose bytes per
/// covered fraction are below `1 / WIDE_DENSITY_RATIO` of the median of its
/// level, or (in L0) of Lbase's, is *wide but small*: in L0 such a file drags
/// everything of Lbase under it into its compaction. Files of the lowest
/// non-empty level are never wide: nothing lies under them for a compaction
/// to drag in (a secondary index's files there are thin beside their
/// table's, and harmless). The page uses the same rule.
pub const WIDE_MIN_FRACTION: f64 = 0.02;
/// How far below the median density a wide file must be (see
/// [`WIDE_MIN_FRACTION`]).
pub const WIDE_DENSITY_RATIO: f64 = 10.0;

/// Bytes per covered fraction of the key space.
fn density(f: &TableInfo, fraction: f64) -> f64 {
    f.size as f64 / fraction.max(1e-9)
}

/// The median density of a level's files (`None` below 4 files: too few
/// to call one of them unusual).
pub fn median_density(files: &[(&TableInfo, f64)]) -> Option<f64> {
    if files.len() < 4 {
        return None;
    }
    let mut d: Vec<f64> = files.iter().map(|(f, x)| density(f, *x)).collect();
    d.sort_by(|a, b| a.total_cmp(b));
    Some(d[d.len() / 2])
}

/// The wide-but-small files among one level's `files` (each with its
/// covered fraction of the key space); `lbase_median` is Lbase's median
/// density when the level is L0.
pub fn wide_files<'a>(
    files: &[(&'a TableInfo, f64)],
    lbase_median: Option<f64>,
) -> Vec<&'a TableInfo> {
    let own = median_density(files);
    files
        .iter()
        .filter(|(f, x)| {
            let d = density(f, *x);
            *x >= WIDE_MIN_FRACTION
                && [own, lbase_median]
                    .iter()
                    .flatten()
                    .any(|m| d < m / WIDE_DENSITY_RATIO)
        })
        .map(|(f, _)| *f)
        .collect()
}

/// A key as people read it: printable ASCII as text; a binary tail as hex
/// after `·` (`d·00000000000186a0`); a key that starts with a binary byte
/// as `0x` and hex.
pub fn display_key(k: &[u8]) -> String {
    let printable = |b: &u8| (0x20..0x7f).contains(b);
    let head = k.iter().take_while(|b| printable(b)).count();
    if head == k.len() {
        String::from_utf8_lossy(k).into_owned()
    } else if head == 0 {
        format!("0x{}", hex::encode(k))
    } else {
        format!(
            "{}·{}",
            String::from_utf8_lossy(&k[..head]),
            hex::encode(&k[head..])
        )
    }
}

/// Draws `tree` in `width` columns of key space (plus labels), the key
/// axis's ends shown by [`display_key`].
pub fn ascii_chart(tree: &Tree, width: usize) -> String {
    ascii_chart_labelled(tree, width, &display_key)
}

/// [`ascii_chart`] with the key axis's two ends shown by `label` (a SQL
/// table's keys decoded by its catalog, `text_chart`).
pub fn ascii_chart_labelled(tree: &Tree, width: usize, label: &dyn Fn(&[u8]) -> String) -> String {
    let width = width.max(10);
    let mut keys: Vec<&[u8]> = (0..LEVELS)
        .flat_map(|l| tree.files(l).iter())
        .flat_map(|f| [f.smallest.as_slice(), f.largest.as_slice()])
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return "(no files)\n".to_string();
    }
    let span = (keys.len() - 1).max(1) as f64;
    let pos = |k: &[u8]| keys.partition_point(|x| *x < k) as f64 / span;
    let col = |x: f64| ((x * (width - 1) as f64).round() as usize).min(width - 1);
    let frac = |f: &TableInfo| {
        let lo = pos(&f.smallest);
        let hi = pos(&f.largest);
        (hi - lo).max(0.5 / span)
    };

    let shape = inspect::l0_sublevels(tree.files(0));
    let mut rows: Vec<(String, Vec<&TableInfo>)> = Vec::new();
    for s in (0..shape.num_sublevels).rev() {
        let files: Vec<&TableInfo> = tree
            .files(0)
            .iter()
            .filter(|f| shape.sublevel.get(&f.number) == Some(&s))
            .map(|f| f.as_ref())
            .collect();
        rows.push((format!("L0.{s}"), files));
    }
    for l in 1..LEVELS {
        if !tree.files(l).is_empty() {
            rows.push((
                format!("L{l}"),
                tree.files(l).iter().map(|f| f.as_ref()).collect(),
            ));
        }
    }
    let mut wide: Vec<(usize, &TableInfo)> = Vec::new();
    let level = |l: usize| -> Vec<(&TableInfo, f64)> {
        tree.files(l)
            .iter()
            .map(|f| (f.as_ref(), frac(f)))
            .collect()
    };
    let lbase = (1..LEVELS)
        .find(|&l| !tree.files(l).is_empty())
        .and_then(|l| median_density(&level(l)));
    let bottom = (0..LEVELS).rev().find(|&l| !tree.files(l).is_empty());
    for l in (0..LEVELS).filter(|&l| Some(l) != bottom) {
        let base = if l == 0 { lbase } else { None };
        wide.extend(wide_files(&level(l), base).into_iter().map(|f| (l, f)));
    }
    let is_wide = |f: &TableInfo| wide.iter().any(|(_, w)| w.number == f.number);

    let mut out = String::new();
    for (label, files) in &rows {
        let mut line = vec![' '; width];
        for f in files {
            let (a, b) = (col(pos(&f.smallest)), col(pos(&f.largest)));
            let fill = if is_wide(f) { '#' } else { '=' };
            if a == b {
                line[a] = if is_wide(f) { '#' } else { '|' };
            } else {
                line[a] = '[';
                line[b] = ']';
                for c in &mut line[a + 1..b] {
                    *c = fill;
                }
            }
        }
        let files_bytes: u64 = files.iter().map(|f| f.size).sum();
        out.push_str(&format!(
            "{label:>5} {} {:>4} files {:>10}\n",
            line.into_iter().collect::<String>(),
            files.len(),
            bytes(files_bytes)
        ));
    }
    let first = label(keys[0]);
    let last = label(keys[keys.len() - 1]);
    let gap = width.saturating_sub(first.chars().count() + last.chars().count());
    out.push_str(&format!("      {first}{}{last}\n", " ".repeat(gap.max(1))));
    out.push_str(&format!(
        "L0: {} files in {} sublevels, read amplification {}; keys placed by their order\n",
        tree.files(0).len(),
        shape.num_sublevels,
        shape.read_amplification
    ));
    for (l, f) in &wide {
        out.push_str(&format!(
            "wide file #{} in L{l}: {} over {:.0}% of the key space (#### above)\n",
            f.number,
            bytes(f.size),
            frac(f) * 100.0
        ));
    }
    out
}

/// Bytes with a binary unit.
pub fn bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < units.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(level: usize, number: u64, lo: &str, hi: &str, size: u64) -> TableInfo {
        TableInfo {
            level,
            number,
            size,
            smallest: lo.into(),
            largest: hi.into(),
            largest_exclusive: false,
            smallest_seq: number,
            largest_seq: number,
            entries: None,
            backing: None,
        }
    }

    #[test]
    fn chart_shows_sublevels_and_marks_the_wide_file() {
        let mut t = Tree::new();
        let mut files = vec![];
        for (i, k) in ["b", "d", "f", "h", "j"].iter().enumerate() {
            let hi = format!("{k}z");
            files.push(f(0, 10 + i as u64, k, &hi, 1 << 20));
        }
        // Newest: a tiny file over everything, above all of them.
        files.push(f(0, 20, "a", "y", 2 << 10));
        files.push(f(6, 30, "a", "m", 64 << 20));
        files.push(f(6, 31, "n", "z", 64 << 20));
        t.apply_files(&files, &[]).unwrap();
        let chart = ascii_chart(&t, 60);
        let lines: Vec<&str> = chart.lines().collect();
        assert!(lines[0].starts_with(" L0.1 ["), "{chart}");
        assert!(
            lines[0].contains("####"),
            "the wide file is marked: {chart}"
        );
        assert!(lines[1].starts_with(" L0.0     [===]"), "{chart}");
        assert!(lines[1].contains("5 files"), "{chart}");
        assert!(lines[2].starts_with("   L6 ["), "{chart}");
        assert!(chart.contains("wide file #20 in L0"), "{chart}");
        assert!(!chart.contains("wide file #1"), "{chart}");
        assert!(chart.contains("2 sublevels"), "{chart}");
    }

    #[test]
    fn l0_files_alike_but_thin_against_lbase_are_wide() {
        let mut t = Tree::new();
        let mut files: Vec<TableInfo> = (0..5)
            .map(|i| f(0, 10 + i, "a", &format!("y{i}"), 300 << 10))
            .collect();
        for (i, k) in ["b", "d", "f", "h", "j", "l"].iter().enumerate() {
            files.push(f(6, 30 + i as u64, k, &format!("{k}z"), 1 << 20));
        }
        t.apply_files(&files, &[]).unwrap();
        let chart = ascii_chart(&t, 60);
        for n in 10..15 {
            assert!(chart.contains(&format!("wide file #{n} in L0")), "{chart}");
        }
        assert!(!chart.contains("in L6"), "{chart}");
    }

    /// An imported table in the bottom level: four row files and a
    /// secondary index's file, 30x thinner per key range. Nothing lies
    /// under it, so it is not wide; the same file one level up, over the
    /// rows, is.
    #[test]
    fn thin_files_of_the_bottom_level_are_not_wide() {
        let rows = ["a", "c", "e", "g"]
            .iter()
            .enumerate()
            .map(|(i, k)| f(6, 30 + i as u64, k, &format!("{k}z"), 64 << 20))
            .collect::<Vec<_>>();
        let mut t = Tree::new();
        let mut files = rows.clone();
        files.push(f(6, 40, "i", "p", 2 << 20));
        files.push(f(6, 41, "q", "z", 60 << 20));
        t.apply_files(&files, &[]).unwrap();
        let chart = ascii_chart(&t, 60);
        assert!(!chart.contains("wide file"), "{chart}");

        let mut t = Tree::new();
        let mut files = rows;
        files.push(f(5, 40, "a", "f", 2 << 20));
        for (i, k) in ["g", "i", "k", "m"].iter().enumerate() {
            files.push(f(5, 50 + i as u64, k, &format!("{k}z"), 32 << 20));
        }
        t.apply_files(&files, &[]).unwrap();
        let chart = ascii_chart(&t, 60);
        assert!(chart.contains("wide file #40 in L5"), "{chart}");
        assert!(!chart.contains("in L6"), "{chart}");
    }

    #[test]
    fn keys_display_as_text_then_hex() {
        assert_eq!(display_key(b"key01"), "key01");
        assert_eq!(display_key(b"d\x00\x01"), "d·0001");
        assert_eq!(display_key(b"\x00stats"), "0x007374617473");
        assert_eq!(display_key(b""), "");
    }
}
