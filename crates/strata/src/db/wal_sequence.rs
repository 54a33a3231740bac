//! The rules the sequence numbers of the WAL records past a MANIFEST must
//! keep, in one place: the open (`open::replay_wals`) refuses a database
//! whose WALs break them, and `strata::check` reports the same finding as
//! a problem, with the same words, so the two judge a directory alike.
//!
//! - Write batches are numbered in the order they are logged: a batch
//!   numbered at or below one before it is damaged or forged (replayed, it
//!   would put an older value over a newer one).
//! - Past the MANIFEST's flushed sequence, numbers run on without a gap,
//!   except for numbers the MANIFEST accounts for (at or below its last
//!   sequence: ingestions) and ingestions whose WAL markers survive. A
//!   batch whose number jumps past the MANIFEST's last sequence follows
//!   something no surviving record holds: a MANIFEST record is missing
//!   (its last records torn off while the WAL after them survived, or an
//!   acknowledged ingestion whose marker is gone too).
//!
//! What a gap *is* is decided here for `Db::repair` too, whose policy
//! differs: it keeps the records past a gap and reports the numbers lost
//! ([`SeqBreak::Gap`] says which), and it also reports a gap before an
//! ingestion's marker, which the open and `check` accept: an ingestion
//! does not sync the WAL, so unsynced writes logged before it may be lost
//! in a power cut while its marker survives ("Defined behaviour under
//! faults", `docs/reliability.md`).

use std::fmt;

/// A break of the numbering rules; its `Display` is what the open refuses
/// with and `check` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SeqBreak {
    /// A write batch starting at `first`, at or below `prev`, where a
    /// batch before it reached.
    Descending { first: u64, prev: u64 },
    /// `from..=to` appear in no WAL record before one numbered `to + 1`,
    /// and `to` is past `accounted` (the MANIFEST's last sequence).
    Gap { from: u64, to: u64, accounted: u64 },
}

impl fmt::Display for SeqBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SeqBreak::Descending { first, prev } => write!(
                f,
                "this record has sequence number {first}, but a record before it already \
                 reached {prev}: log records must ascend"
            ),
            SeqBreak::Gap {
                from,
                to,
                accounted,
            } => write!(
                f,
                "this record has sequence number {}, but {from}..={to} appear in no WAL \
                 record and are past the MANIFEST's last sequence {accounted}: a MANIFEST \
                 record is missing",
                to + 1
            ),
        }
    }
}

/// The sequence numbers of one replay's WAL records so far, oldest WAL
/// first, in log order.
pub(crate) struct WalSequence {
    /// The MANIFEST's flushed sequence: records at or below it are in
    /// tables already.
    flushed: u64,
    /// The MANIFEST's last sequence.
    manifest_last: u64,
    /// The first number a record may start at without a gap.
    expect: u64,
    /// The last number of the last write batch (markers aside).
    prev_batch_last: u64,
}

impl WalSequence {
    pub(crate) fn new(flushed: u64, manifest_last: u64) -> WalSequence {
        WalSequence {
            flushed,
            manifest_last,
            expect: flushed + 1,
            prev_batch_last: 0,
        }
    }

    /// An ingestion's marker (a batch with no update) at `seq`: the number
    /// is taken, by the ingestion the MANIFEST records or the open redoes.
    /// Returns the gap before it, if there is one by the rule `batch`
    /// applies; the open and `check` accept it (see the module
    /// documentation), repair reports it lost.
    pub(crate) fn marker(&mut self, seq: u64) -> Option<SeqBreak> {
        if seq <= self.flushed {
            return None;
        }
        let gap = self.gap_before(seq);
        self.expect = self.expect.max(seq + 1);
        gap
    }

    /// The gap before a record starting at `first` (past the flushed
    /// sequence), if any: numbers from the expected one up to it that no
    /// record holds, past the MANIFEST's last sequence.
    fn gap_before(&self, first: u64) -> Option<SeqBreak> {
        let expect = self.expect;
        (first > expect && first - 1 > self.manifest_last).then(|| SeqBreak::Gap {
            from: expect,
            to: first - 1,
            accounted: self.manifest_last,
        })
    }

    /// A write batch numbered `first..=last`. `Ok(true)` if it is to be
    /// replayed (past the flushed sequence), `Ok(false)` if its updates
    /// are in tables already; `Err` says which rule it breaks. After a
    /// gap the numbers go on from this batch (a checker reading on reports
    /// the gap once).
    pub(crate) fn batch(&mut self, first: u64, last: u64) -> Result<bool, SeqBreak> {
        if first <= self.prev_batch_last {
            return Err(SeqBreak::Descending {
                first,
                prev: self.prev_batch_last,
            });
        }
        self.prev_batch_last = last;
        if last <= self.flushed {
            return Ok(false);
        }
        let gap = self.gap_before(first);
        self.expect = self.expect.max(last + 1);
        match gap {
            Some(g) => Err(g),
            None => Ok(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_past_the_manifest_and_descending_batches_are_refused() {
        // Flushed to 10, last sequence 20 (an ingestion at 15, say).
        let mut s = WalSequence::new(10, 20);
        assert_eq!(s.batch(5, 10), Ok(false));
        assert_eq!(s.batch(11, 14), Ok(true));
        // 15 is the MANIFEST's: no gap.
        assert_eq!(s.batch(16, 20), Ok(true));
        s.marker(21);
        assert_eq!(s.batch(22, 22), Ok(true));
        let e = s.batch(25, 26).unwrap_err();
        assert_eq!(
            e,
            SeqBreak::Gap {
                from: 23,
                to: 24,
                accounted: 20
            }
        );
        let e = e.to_string();
        assert!(
            e.contains("sequence number 25, but 23..=24 appear in no WAL record"),
            "{e}"
        );
        assert!(e.contains("a MANIFEST record is missing"), "{e}");
        // Reported once: the numbers go on from there.
        assert_eq!(s.batch(27, 27), Ok(true));
        let e = s.batch(27, 28).unwrap_err();
        assert_eq!(
            e,
            SeqBreak::Descending {
                first: 27,
                prev: 27
            }
        );
        assert!(e.to_string().contains("must ascend"), "{e}");
    }

    /// A marker after a gap past the MANIFEST is told (repair reports it);
    /// one at a number the MANIFEST accounts for, or right after the last
    /// record, is not; either way the numbers go on from it.
    #[test]
    fn a_gap_before_a_marker_is_told() {
        let mut s = WalSequence::new(10, 20);
        assert_eq!(s.marker(5), None);
        assert_eq!(s.batch(11, 12), Ok(true));
        // 13..=17 are the MANIFEST's.
        assert_eq!(s.marker(18), None);
        assert_eq!(s.batch(19, 21), Ok(true));
        assert_eq!(s.marker(22), None);
        assert_eq!(
            s.marker(25),
            Some(SeqBreak::Gap {
                from: 23,
                to: 24,
                accounted: 20
            })
        );
        assert_eq!(s.batch(26, 26), Ok(true));
    }
}
