//! Round trips, crash shapes (truncation, zero fill, garbage) and corruption
//! for the log format, checked against the record list that was written.

use super::format::{
    encode_header, record_checksum, Header, RecordType, BLOCK_SIZE, HEADER_SIZE, MAX_FRAGMENT,
};
use super::*;
use crate::error::Error;
use crate::vfs::{read_all, MemVfs, SequentialFile, Vfs};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use std::path::Path;

/// A written log: its bytes, and each logical record's payload and extent
/// (offset of its first header, offset just past its last fragment).
struct Log {
    bytes: Vec<u8>,
    records: Vec<Vec<u8>>,
    extents: Vec<(u64, u64)>,
}

fn write_log(records: &[Vec<u8>]) -> Log {
    let vfs = MemVfs::new();
    let path = Path::new("/wal/000001.log");
    let mut w = LogWriter::new(vfs.create(path).unwrap(), "000001.log");
    let mut extents = Vec::new();
    for r in records {
        let before = w.len();
        // A record starts after any padding the writer must insert.
        let rem = format::block_remaining(before);
        let start = if rem < HEADER_SIZE {
            before + rem as u64
        } else {
            before
        };
        w.add_record(r).unwrap();
        extents.push((start, w.len()));
    }
    w.sync().unwrap();
    let bytes = read_all(&vfs, path).unwrap();
    assert_eq!(bytes.len() as u64, w.len());
    Log {
        bytes,
        records: records.to_vec(),
        extents,
    }
}

/// Everything a reader produced for one file.
#[derive(Debug)]
struct Outcome {
    records: Vec<Vec<u8>>,
    offsets: Vec<(u64, u64)>,
    end: Result<(), Error>,
    dropped: Option<DroppedTail>,
}

fn read_from(file: Box<dyn SequentialFile>, policy: TailPolicy) -> Outcome {
    let mut r = LogReader::new(file, "000001.log", policy);
    let mut records = Vec::new();
    let mut offsets = Vec::new();
    let end = loop {
        match r.read_record() {
            Ok(Some(rec)) => {
                records.push(rec);
                offsets.push((r.last_record_offset(), r.last_record_end()));
            }
            Ok(None) => {
                // Stays at the end.
                assert!(r.read_record().unwrap().is_none());
                break Ok(());
            }
            Err(e) => {
                // Errors are sticky.
                assert!(r.read_record().is_err());
                break Err(e);
            }
        }
    };
    assert_eq!(
        r.dropped_tail_bytes(),
        r.dropped_tail().map_or(0, |d| d.bytes)
    );
    Outcome {
        records,
        offsets,
        end,
        dropped: r.dropped_tail(),
    }
}

fn read_bytes(bytes: &[u8], policy: TailPolicy) -> Outcome {
    let vfs = MemVfs::new();
    let path = Path::new("/wal/000001.log");
    let mut f = vfs.create(path).unwrap();
    f.append(bytes).unwrap();
    read_from(vfs.open_sequential(path).unwrap(), policy)
}

/// A file that returns short reads of random sizes, as pipes and network
/// file systems may.
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    rng: StdRng,
}

impl SequentialFile for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> crate::Result<usize> {
        let max = if self.rng.gen_bool(0.5) { 13 } else { 50_000 };
        let n = self
            .rng
            .gen_range(1..=max)
            .min(buf.len())
            .min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn read_chunked(bytes: &[u8], policy: TailPolicy, seed: u64) -> Outcome {
    let f = Chunked {
        data: bytes.to_vec(),
        pos: 0,
        rng: StdRng::seed_from_u64(seed),
    };
    read_from(Box::new(f), policy)
}

fn corruption_offset(o: &Outcome) -> u64 {
    match &o.end {
        Err(Error::Corruption { offset, file, .. }) => {
            assert_eq!(file, "000001.log");
            *offset
        }
        other => panic!(
            "expected corruption, got {other:?} after {} records",
            o.records.len()
        ),
    }
}

fn random_bytes(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill_bytes(&mut v);
    v
}

/// Records whose sizes hit every layout case: empty, tiny, exactly a
/// block's payload, leaving a 6-byte tail (padding), leaving exactly a
/// header (empty First fragment), spanning blocks.
fn layout_records(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let sizes = [
        10,
        0,
        MAX_FRAGMENT - 10 - 2 * HEADER_SIZE - 6, // block 0 ends with 6 padding bytes
        MAX_FRAGMENT - HEADER_SIZE,              // leaves exactly 7 bytes in block 1
        300,                                     // empty First at the end of block 1
        5000,
        BLOCK_SIZE, // spans blocks 2 and 3
        0,
        1,
    ];
    sizes.iter().map(|&n| random_bytes(rng, n)).collect()
}

#[test]
fn layout_records_hit_the_cases() {
    let log = write_log(&layout_records(&mut StdRng::seed_from_u64(1)));
    let b = BLOCK_SIZE as u64;
    // Record 3 starts block 1 after block 0's padding.
    assert_eq!(log.extents[3].0, b);
    assert_eq!(&log.bytes[BLOCK_SIZE - 6..BLOCK_SIZE], &[0u8; 6]);
    // Record 4 starts 7 bytes before block 2 with an empty First.
    assert_eq!(log.extents[4].0, 2 * b - 7);
    let h = Header::decode(
        log.bytes[2 * BLOCK_SIZE - 7..2 * BLOCK_SIZE]
            .try_into()
            .unwrap(),
    );
    assert_eq!((h.kind, h.length), (RecordType::First as u8, 0));
}

#[test]
fn round_trips_all_sizes() {
    let mut rng = StdRng::seed_from_u64(2);
    let mut records = layout_records(&mut rng);
    for n in [
        BLOCK_SIZE - HEADER_SIZE,
        BLOCK_SIZE,
        BLOCK_SIZE + 1,
        7 * BLOCK_SIZE + 3,
        1 << 20,
        0,
    ] {
        records.push(random_bytes(&mut rng, n));
    }
    for _ in 0..200 {
        let n = match rng.gen_range(0..4) {
            0 => rng.gen_range(0..20),
            1 => rng.gen_range(0..2000),
            2 => rng.gen_range(0..BLOCK_SIZE * 2),
            _ => rng.gen_range(BLOCK_SIZE - 20..BLOCK_SIZE + 20),
        };
        records.push(random_bytes(&mut rng, n));
    }
    let log = write_log(&records);
    for (i, o) in [
        read_bytes(&log.bytes, TailPolicy::TolerateTornTail),
        read_bytes(&log.bytes, TailPolicy::Strict),
        read_chunked(&log.bytes, TailPolicy::TolerateTornTail, 3),
        read_chunked(&log.bytes, TailPolicy::Strict, 4),
    ]
    .into_iter()
    .enumerate()
    {
        assert!(o.end.is_ok(), "reader {i}: {:?}", o.end);
        assert_eq!(o.records.len(), records.len(), "reader {i}");
        assert!(o.records == records, "reader {i}: records differ");
        assert_eq!(o.offsets, log.extents, "reader {i}");
        assert_eq!(o.dropped, None, "reader {i}");
    }
}

/// `last_record_byte_offset` maps every byte of every record, whatever its
/// layout (padding before it, an empty First fragment, fragments across
/// blocks), to the file byte that holds it; the record's length maps to
/// the end of its last fragment.
#[test]
fn every_byte_of_a_record_maps_to_its_file_offset() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut records = layout_records(&mut rng);
    records.push(random_bytes(&mut rng, 3 * BLOCK_SIZE + 11));
    let log = write_log(&records);
    let vfs = MemVfs::new();
    let path = Path::new("/wal/000001.log");
    crate::vfs::write_all(&vfs, path, &log.bytes).unwrap();
    let mut r = LogReader::new(vfs.open_sequential(path).unwrap(), "l", TailPolicy::Strict);
    for (n, rec) in records.iter().enumerate() {
        assert_eq!(r.read_record().unwrap().as_ref(), Some(rec), "record {n}");
        for (i, byte) in rec.iter().enumerate() {
            let at = r.last_record_byte_offset(i as u64) as usize;
            assert_eq!(log.bytes[at], *byte, "record {n}, byte {i} at {at}");
            if i == 0 {
                assert!(at as u64 >= log.extents[n].0 + HEADER_SIZE as u64);
            }
        }
        assert_eq!(
            r.last_record_byte_offset(rec.len() as u64),
            log.extents[n].1,
            "record {n}: its end"
        );
    }
}

#[test]
fn empty_file_has_no_records() {
    let o = read_bytes(&[], TailPolicy::Strict);
    assert!(o.end.is_ok() && o.records.is_empty() && o.dropped.is_none());
}

/// What a truncation at `t` must read back: the records that end by `t`,
/// and the dropped bytes of the record cut in two (none if the cut falls
/// on a record boundary or in block padding).
fn expected_prefix(log: &Log, t: u64) -> (usize, Option<(u64, u64)>) {
    let k = log.extents.iter().take_while(|e| e.1 <= t).count();
    let dropped = match log.extents.get(k) {
        Some(&(start, _)) if t > start => Some((start, t - start)),
        _ => None,
    };
    (k, dropped)
}

#[test]
fn every_truncation_point_reads_a_prefix() {
    let mut rng = StdRng::seed_from_u64(5);
    let log = write_log(&layout_records(&mut rng));
    let n = log.bytes.len();
    assert!(n > 3 * BLOCK_SIZE);
    for t in 0..=n {
        let file = &log.bytes[..t];
        let (k, dropped) = expected_prefix(&log, t as u64);
        let o = read_bytes(file, TailPolicy::TolerateTornTail);
        assert!(o.end.is_ok(), "cut at {t}: {:?}", o.end);
        assert_eq!(o.records.len(), k, "cut at {t}");
        assert!(
            o.records[..] == log.records[..k],
            "cut at {t}: wrong records"
        );
        assert_eq!(
            o.dropped.map(|d| (d.offset, d.bytes)),
            dropped,
            "cut at {t}"
        );

        let s = read_bytes(file, TailPolicy::Strict);
        assert!(s.records[..] == log.records[..k], "strict cut at {t}");
        match dropped {
            None => assert!(s.end.is_ok(), "strict cut at {t}: {:?}", s.end),
            Some(_) => {
                let off = corruption_offset(&s);
                assert!(
                    off >= log.extents[k].0 && off < t as u64,
                    "strict cut at {t}"
                );
            }
        }
    }
}

/// One physical record of a clean log: offset, total size, and the index
/// of the logical record it belongs to.
fn physical_layout(bytes: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let (mut pos, mut logical) = (0, 0);
    while pos < bytes.len() {
        let rem = BLOCK_SIZE - pos % BLOCK_SIZE;
        if rem < HEADER_SIZE {
            pos += rem;
            continue;
        }
        let h = Header::decode(bytes[pos..pos + HEADER_SIZE].try_into().unwrap());
        out.push((pos, HEADER_SIZE + h.length, logical));
        if h.kind == RecordType::Full as u8 || h.kind == RecordType::Last as u8 {
            logical += 1;
        }
        pos += HEADER_SIZE + h.length;
    }
    out
}

/// Flips byte `at` of `log` and checks the outcome the rule promises:
/// padding bytes do not matter; damage in any record but the last is
/// corruption at the damaged physical record; damage in the last record is
/// a torn tail from that record's start.
fn check_flip(log: &Log, layout: &[(usize, usize, usize)], at: usize, xor: u8) {
    let mut bytes = log.bytes.clone();
    bytes[at] ^= xor;
    let o = read_bytes(&bytes, TailPolicy::TolerateTornTail);
    let s = read_bytes(&bytes, TailPolicy::Strict);
    let Some(&(phys, _, logical)) = layout.iter().find(|p| at >= p.0 && at < p.0 + p.1) else {
        // Block padding: not covered by any checksum, never read.
        assert!(o.end.is_ok() && o.records == log.records && o.dropped.is_none());
        assert!(s.end.is_ok() && s.records == log.records);
        return;
    };
    let n = log.records.len();
    assert!(
        s.records[..] == log.records[..logical],
        "strict flip at {at}"
    );
    assert_eq!(corruption_offset(&s), phys as u64, "strict flip at {at}");
    assert!(o.records[..] == log.records[..logical], "flip at {at}");
    if logical + 1 < n {
        assert_eq!(corruption_offset(&o), phys as u64, "flip at {at}");
    } else {
        assert!(
            o.end.is_ok(),
            "flip at {at} in the last record: {:?}",
            o.end
        );
        let start = log.extents[logical].0;
        let d = o.dropped.expect("a dropped tail");
        assert_eq!((d.offset, d.bytes), (start, bytes.len() as u64 - start));
    }
}

#[test]
fn every_byte_flip_of_a_small_log() {
    // Small records, most in one block, so every flip of a length field is
    // followed by valid records in the same block.
    let mut rng = StdRng::seed_from_u64(6);
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let n = if i == 30 {
                40_000
            } else {
                rng.gen_range(0..60)
            };
            random_bytes(&mut rng, n)
        })
        .collect();
    let log = write_log(&records);
    let layout = physical_layout(&log.bytes);
    for at in 0..log.bytes.len() {
        // Vary which bits flip; CRC32C catches every burst up to 32 bits.
        let xor = 1u8 << (at % 8) | 0x80 >> (at % 5);
        check_flip(&log, &layout, at, xor);
    }
}

#[test]
fn sampled_flips_of_a_large_log() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut records = layout_records(&mut rng);
    records.push(random_bytes(&mut rng, 100));
    let log = write_log(&records);
    let layout = physical_layout(&log.bytes);
    let mut points: Vec<usize> = (0..300)
        .map(|_| rng.gen_range(0..log.bytes.len()))
        .collect();
    // Every header byte, plus padding and the empty First.
    for &(off, _, _) in &layout {
        points.extend(off..off + HEADER_SIZE);
    }
    points.extend(BLOCK_SIZE - 6..BLOCK_SIZE);
    for at in points {
        check_flip(&log, &layout, at, rng.gen_range(1..=255));
    }
}

#[test]
fn zero_filled_tails_are_dropped() {
    let mut rng = StdRng::seed_from_u64(8);
    let log = write_log(&layout_records(&mut rng));
    let len = log.bytes.len();
    let to_block_end = BLOCK_SIZE - len % BLOCK_SIZE;
    for zeros in [
        1,
        6,
        7,
        8,
        100,
        to_block_end,
        to_block_end + 7,
        3 * BLOCK_SIZE + 5,
    ] {
        let mut bytes = log.bytes.clone();
        bytes.resize(len + zeros, 0);
        let o = read_bytes(&bytes, TailPolicy::TolerateTornTail);
        assert!(o.end.is_ok(), "{zeros} zeros: {:?}", o.end);
        assert!(o.records == log.records, "{zeros} zeros");
        let d = o.dropped.expect("zeros after the last record are a tail");
        assert_eq!((d.offset, d.bytes), (len as u64, zeros as u64));
        let want = if zeros < HEADER_SIZE {
            Damage::TruncatedHeader
        } else {
            Damage::ZeroFilled
        };
        assert_eq!(d.damage, want, "{zeros} zeros");
        // Strict refuses the same file.
        assert_eq!(
            corruption_offset(&read_bytes(&bytes, TailPolicy::Strict)),
            len as u64
        );
    }
}

#[test]
fn zero_filled_partial_block_after_a_cut_is_a_tail() {
    // A preallocated block the crash left partly written: a record cut
    // anywhere, then zeros to the end of the block and beyond.
    let mut rng = StdRng::seed_from_u64(9);
    let log = write_log(&layout_records(&mut rng));
    for _ in 0..300 {
        let t = rng.gen_range(0..log.bytes.len());
        let mut bytes = log.bytes[..t].to_vec();
        let fill = BLOCK_SIZE - t % BLOCK_SIZE + rng.gen_range(0..2 * BLOCK_SIZE);
        bytes.resize(t + fill, 0);
        let (k, _) = expected_prefix(&log, t as u64);
        let o = read_bytes(&bytes, TailPolicy::TolerateTornTail);
        assert!(o.end.is_ok(), "cut at {t}: {:?}", o.end);
        assert!(o.records[..] == log.records[..k], "cut at {t}");
    }
}

#[test]
fn garbage_tail_is_dropped() {
    let mut rng = StdRng::seed_from_u64(10);
    let log = write_log(&layout_records(&mut rng));
    for _ in 0..50 {
        let t = rng.gen_range(0..log.bytes.len());
        let mut bytes = log.bytes[..t].to_vec();
        let n = rng.gen_range(1..3 * BLOCK_SIZE);
        bytes.extend(random_bytes(&mut rng, n));
        let (k, _) = expected_prefix(&log, t as u64);
        let o = read_bytes(&bytes, TailPolicy::TolerateTornTail);
        assert!(o.end.is_ok(), "cut at {t}: {:?}", o.end);
        assert!(o.records[..] == log.records[..k], "cut at {t}");
    }
}

#[test]
fn zeroed_hole_followed_by_records_is_corruption() {
    // A page in the middle never written (or lost), later records intact.
    let mut rng = StdRng::seed_from_u64(11);
    let records: Vec<Vec<u8>> = (0..200).map(|_| random_bytes(&mut rng, 900)).collect();
    let log = write_log(&records);
    let mut bytes = log.bytes.clone();
    bytes[40_000..44_096].fill(0);
    let layout = physical_layout(&log.bytes);
    let hit = layout
        .iter()
        .find(|p| p.0 + p.1 > 40_000)
        .expect("a record overlaps the hole");
    let o = read_bytes(&bytes, TailPolicy::TolerateTornTail);
    assert_eq!(corruption_offset(&o), hit.0 as u64);
    assert!(o.records[..] == records[..hit.2]);
}

/// Appends one physical record by hand (no block handling: callers keep
/// each record inside its block).
fn emit(buf: &mut Vec<u8>, kind: RecordType, payload: &[u8]) -> u64 {
    let at = buf.len() as u64;
    buf.extend_from_slice(&encode_header(kind, payload));
    buf.extend_from_slice(payload);
    at
}

#[test]
fn bad_fragment_sequences() {
    use RecordType::*;
    let tolerate = TailPolicy::TolerateTornTail;

    // First interrupted by a Full, records after: corruption at the First.
    let mut b = Vec::new();
    emit(&mut b, Full, b"a");
    let first = emit(&mut b, First, b"b1");
    emit(&mut b, Full, b"c");
    emit(&mut b, Full, b"d");
    let o = read_bytes(&b, tolerate);
    assert_eq!(corruption_offset(&o), first);
    assert_eq!(o.records, vec![b"a".to_vec()]);

    // First interrupted by a complete First..Last, laid out as a writer
    // would (each First fills its block): a crashed writer's torn record
    // with a second writer's records after it.
    let fill_block = |b: &Vec<u8>| vec![7u8; BLOCK_SIZE - b.len() % BLOCK_SIZE - HEADER_SIZE];
    let mut b = Vec::new();
    emit(&mut b, Full, b"a");
    let fill = fill_block(&b);
    let first = emit(&mut b, First, &fill);
    let fill = fill_block(&b);
    emit(&mut b, First, &fill);
    emit(&mut b, Last, b"c2");
    let o = read_bytes(&b, tolerate);
    assert_eq!(corruption_offset(&o), first);
    // Without the Last, the second First is no complete record either:
    // the whole tail from the first First is dropped.
    b.truncate(2 * BLOCK_SIZE);
    let o = read_bytes(&b, tolerate);
    assert!(o.end.is_ok(), "{:?}", o.end);
    assert_eq!(
        o.dropped.map(|d| (d.offset, d.damage)),
        Some((first, Damage::IncompleteRecord))
    );

    // A Middle with no First, then a valid record: corruption at the Middle.
    let mut b = Vec::new();
    emit(&mut b, Full, b"a");
    let orphan = emit(&mut b, Middle, b"x");
    emit(&mut b, Full, b"c");
    assert_eq!(corruption_offset(&read_bytes(&b, tolerate)), orphan);

    // First and Middle at end of file: a torn tail from the First.
    let mut b = Vec::new();
    emit(&mut b, Full, b"a");
    let first = emit(&mut b, First, b"b1");
    emit(&mut b, Middle, b"b2");
    let o = read_bytes(&b, tolerate);
    assert!(o.end.is_ok());
    assert_eq!(o.records, vec![b"a".to_vec()]);
    let d = o.dropped.unwrap();
    assert_eq!(d.damage, Damage::IncompleteRecord);
    assert_eq!((d.offset, d.bytes), (first, b.len() as u64 - first));
    assert_eq!(
        corruption_offset(&read_bytes(&b, TailPolicy::Strict)),
        first
    );

    // An orphan Last at end of file (its First was torn away): a tail.
    let mut b = Vec::new();
    emit(&mut b, Full, b"a");
    let orphan = emit(&mut b, Last, b"x");
    let o = read_bytes(&b, tolerate);
    assert!(o.end.is_ok());
    assert_eq!(
        o.dropped.map(|d| (d.offset, d.damage)),
        Some((orphan, Damage::OrphanFragment))
    );

    // A damaged First whose intact Middle and Last follow: no complete
    // record after the damage, so still a torn tail.
    let mut b = Vec::new();
    emit(&mut b, Full, b"a");
    let first = emit(&mut b, First, b"b1");
    emit(&mut b, Middle, b"b2");
    emit(&mut b, Last, b"b3");
    b[first as usize + HEADER_SIZE] ^= 1;
    let o = read_bytes(&b, tolerate);
    assert!(o.end.is_ok(), "{:?}", o.end);
    assert_eq!(
        o.dropped.map(|d| (d.offset, d.damage)),
        Some((first, Damage::BadChecksum))
    );
}

#[test]
fn foreign_record_types_are_not_supported() {
    // A RocksDB recyclable Full record: type 5 and a log number, checksummed.
    let mut b = Vec::new();
    let payload = b"batch";
    let mut covered = vec![5u8];
    covered.extend_from_slice(&9u32.to_le_bytes());
    covered.extend_from_slice(payload);
    let crc = crate::util::checksum::mask_crc(crc32c::crc32c(&covered));
    b.extend_from_slice(&crc.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    b.extend_from_slice(&covered);
    let o = read_bytes(&b, TailPolicy::TolerateTornTail);
    assert!(matches!(o.end, Err(Error::NotSupported(_))), "{:?}", o.end);

    // A legacy-header record of an unknown type with a good checksum.
    let mut b = Vec::new();
    b.extend_from_slice(&record_checksum(9, b"z").to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&[9, b'z']);
    let o = read_bytes(&b, TailPolicy::TolerateTornTail);
    assert!(matches!(o.end, Err(Error::NotSupported(_))), "{:?}", o.end);

    // The same with a bad checksum is ordinary damage (here a torn tail).
    b[0] ^= 1;
    let o = read_bytes(&b, TailPolicy::TolerateTornTail);
    assert_eq!(o.dropped.map(|d| d.damage), Some(Damage::UnknownType(9)));
}

#[test]
fn appending_with_offset_reads_as_one_log() {
    let mut rng = StdRng::seed_from_u64(12);
    let first = write_log(&layout_records(&mut rng));
    let more: Vec<Vec<u8>> = (0..5).map(|i| random_bytes(&mut rng, i * 7000)).collect();
    let vfs = MemVfs::new();
    let path = Path::new("/wal/000001.log");
    let mut f = vfs.create(path).unwrap();
    f.append(&first.bytes).unwrap();
    let mut w = LogWriter::with_offset(f, "000001.log", first.bytes.len() as u64);
    for r in &more {
        w.add_record(r).unwrap();
    }
    let o = read_from(vfs.open_sequential(path).unwrap(), TailPolicy::Strict);
    assert!(o.end.is_ok());
    let mut all = first.records.clone();
    all.extend(more);
    assert!(o.records == all);
}

fn record_sizes() -> impl Strategy<Value = Vec<usize>> {
    let size = prop_oneof![
        4 => 0usize..64,
        3 => 0usize..4000,
        2 => (BLOCK_SIZE - 40)..(BLOCK_SIZE + 40),
        1 => 0usize..(4 * BLOCK_SIZE),
    ];
    proptest::collection::vec(size, 0..24)
}

/// What follows the cut in a simulated crash.
#[derive(Clone, Debug)]
enum Tail {
    Nothing,
    Zeros(usize),
    Garbage(usize),
}

fn tails() -> impl Strategy<Value = Tail> {
    prop_oneof![
        Just(Tail::Nothing),
        (1usize..(2 * BLOCK_SIZE)).prop_map(Tail::Zeros),
        (1usize..(2 * BLOCK_SIZE)).prop_map(Tail::Garbage),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A crash keeps a prefix of the bytes and may leave zeros or garbage
    /// after it; recovery must return exactly the records that were
    /// completely written, never an error and never a wrong record.
    #[test]
    fn crash_recovers_a_prefix(
        sizes in record_sizes(),
        cut in 0.0f64..=1.0,
        tail in tails(),
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let model: Vec<Vec<u8>> = sizes.iter().map(|&n| random_bytes(&mut rng, n)).collect();
        let log = write_log(&model);
        let t = (log.bytes.len() as f64 * cut) as usize;
        let mut bytes = log.bytes[..t].to_vec();
        match tail {
            Tail::Nothing => {}
            Tail::Zeros(n) => bytes.resize(t + n, 0),
            Tail::Garbage(n) => bytes.extend(random_bytes(&mut rng, n)),
        }
        let (k, _) = expected_prefix(&log, t as u64);
        let o = read_chunked(&bytes, TailPolicy::TolerateTornTail, seed);
        prop_assert!(o.end.is_ok(), "{:?}", o.end);
        prop_assert_eq!(o.records.len(), k);
        prop_assert!(o.records[..] == model[..k]);
        prop_assert_eq!(&o.offsets[..], &log.extents[..k]);
        if let Some(d) = o.dropped {
            prop_assert!(d.offset >= o.offsets.last().map_or(0, |e| e.1));
            prop_assert_eq!(d.offset + d.bytes, bytes.len() as u64);
        } else {
            prop_assert!(bytes.len() as u64 - o.offsets.last().map_or(0, |e| e.1) < HEADER_SIZE as u64);
        }
    }

    /// One flipped byte anywhere in an intact log: the rule's outcome.
    #[test]
    fn one_flip_follows_the_rule(
        sizes in record_sizes(),
        at in 0.0f64..1.0,
        xor in 1u8..=255,
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let model: Vec<Vec<u8>> = sizes.iter().map(|&n| random_bytes(&mut rng, n)).collect();
        let log = write_log(&model);
        prop_assume!(!log.bytes.is_empty());
        let at = (log.bytes.len() as f64 * at) as usize;
        check_flip(&log, &physical_layout(&log.bytes), at, xor);
    }
}
