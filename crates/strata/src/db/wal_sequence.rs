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
    pub(crate) fn marker(&mut self, seq: u64) {
        if seq > self.flushed {
            self.expect = self.expect.max(seq + 1);
        }
    }

    /// A write batch numbered `first..=last`. `Ok(true)` if it is to be
    /// replayed (past the flushed sequence), `Ok(false)` if its updates
    /// are in tables already; `Err` says which rule it breaks. After a
    /// gap the numbers go on from this batch (a checker reading on reports
    /// the gap once).
    pub(crate) fn batch(&mut self, first: u64, last: u64) -> Result<bool, String> {
        if first <= self.prev_batch_last {
            return Err(format!(
                "this record has sequence number {first}, but a record before it already \
                 reached {}: log records must ascend",
                self.prev_batch_last
            ));
        }
        self.prev_batch_last = last;
        if last <= self.flushed {
            return Ok(false);
        }
        let expect = self.expect;
        self.expect = expect.max(last + 1);
        if first > expect && first - 1 > self.manifest_last {
            return Err(format!(
                "this record has sequence number {first}, but {expect}..={} appear in no WAL \
                 record and are past the MANIFEST's last sequence {}: a MANIFEST record is \
                 missing",
                first - 1,
                self.manifest_last
            ));
        }
        Ok(true)
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
        assert!(e.contains("23..=24 appear in no WAL record"), "{e}");
        assert!(e.contains("a MANIFEST record is missing"), "{e}");
        // Reported once: the numbers go on from there.
        assert_eq!(s.batch(27, 27), Ok(true));
        let e = s.batch(27, 28).unwrap_err();
        assert!(e.contains("must ascend"), "{e}");
    }
}
