#!/usr/bin/env python3
"""Deterministic key/value generator for the RocksDB compatibility fixtures.

Usage:
  gen_kv.py --seed S --n N [--del-every K] [--ranges R]

Prints N point entries, one per line, in strictly increasing key order, in
the input syntax of `strata-rocksdb-compat write`:

  put HEXKEY HEXVALUE     (an empty value is written as `put HEXKEY`)
  del HEXKEY              (--del-every K: every K-th entry becomes a delete)
  range HEXSTART HEXEND   (--ranges R: R DeleteRange lines, end exclusive)

Keys and values are lowercase hex. The output depends only on the arguments:
all randomness comes from the SplitMix64 generator below (not from Python's
`random` module), so it is stable across Python versions and easy to port.

Keys (bytes, compared with memcmp):
  * lengths from 1 to 300 bytes: max(2, N // 64) keys are 241..300 bytes
    long (so all varint/hash length paths are hit), ~5% are 1..3 bytes
    (shorter than a 4-byte prefix), ~5% are 65..200 bytes, the rest 4..24;
  * a mix of text keys sharing a handful of 4-byte "table" prefixes (good for
    prefix-extractor tests and for key delta encoding), free-form text keys,
    and binary keys containing any byte including 0x00 and 0xff;
  * candidates are generated until N distinct keys exist, then sorted.

Values:
  * ~20% empty, ~45% short compressible text (1..24 bytes), ~20% random
    bytes (1..24), ~15% longer repetitive text (25..120);
  * every entry with i % 150 == 13 gets a large value (1000..2000 bytes),
    alternately random bytes and compressible text;
  * entries 3n/4 .. 3n/4+13 get random 250..350 byte values, so one data
    block is incompressible and stored raw even in compressed files.

Range tombstones (--ranges R) follow all point entries, in start-key order
(SstFileWriter accepts DeleteRange calls in any order relative to Put). They
do not overlap each other. The first covers a gap only (start and end lie
strictly between two adjacent point keys); the others each span four point
keys. Since SstFileWriter gives every entry sequence number 0, a tombstone
does not hide point entries of its own file (it only affects older data once
the file is ingested into a DB).
"""

import argparse
import sys

MASK64 = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 (Steele, Lea, Flood 2014): tiny, well-known, portable."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform-ish integer in [0, n) (modulo bias is irrelevant here)."""
        return self.next_u64() % n

    def between(self, lo, hi):
        """Integer in [lo, hi] inclusive."""
        return lo + self.below(hi - lo + 1)

    def bytes(self, n):
        return bytes(self.below(256) for _ in range(n))


TABLE_PREFIXES = [b"acct", b"blob", b"cfg/", b"idx:", b"log.", b"user", b"zz\x00\xff"]
WORDS = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf",
         b"hotel", b"india", b"juliet", b"kilo", b"lima", b"mike", b"strata",
         b"rocksdb", b"block", b"filter", b"index"]
ALNUM = b"abcdefghijklmnopqrstuvwxyz0123456789"


def text(rng, length):
    """Compressible text: words from a small vocabulary separated by spaces."""
    out = bytearray()
    while len(out) < length:
        out += WORDS[rng.below(len(WORDS))] + b" "
    return bytes(out[:length])


def key_candidate(rng, long_key):
    """One key candidate; `long_key` forces a length in 241..300."""
    if long_key:
        length = rng.between(241, 300)
        prefix = TABLE_PREFIXES[rng.below(len(TABLE_PREFIXES))]
        return prefix + text(rng, length - len(prefix))
    kind = rng.below(20)
    if kind < 10:
        # Table-prefixed text key: 4-byte prefix, 3..6 digits, 0..8 byte suffix.
        prefix = TABLE_PREFIXES[rng.below(len(TABLE_PREFIXES))]
        body = b"%d" % rng.between(100, 999999)
        suffix = bytes(ALNUM[rng.below(len(ALNUM))] for _ in range(rng.below(9)))
        return prefix + body + suffix
    if kind < 14:
        # Free-form lowercase text key, 4..24 bytes.
        return bytes(ALNUM[rng.below(len(ALNUM))] for _ in range(rng.between(4, 24)))
    if kind < 18:
        # Binary key, 4..16 bytes, any byte value including 0x00 and 0xff.
        return rng.bytes(rng.between(4, 16))
    if kind < 19:
        # Tiny key, 1..3 bytes (shorter than a 4-byte prefix extractor).
        return rng.bytes(rng.between(1, 3))
    # Mid-length text key (65..200 bytes).
    return text(rng, rng.between(65, 200))


def gen_keys(rng, n):
    """N distinct, sorted keys, about n/64 of them longer than 240 bytes."""
    n_long = max(2, n // 64)
    keys = set()
    while len(keys) < n_long:
        keys.add(key_candidate(rng, True))
    while len(keys) < n:
        keys.add(key_candidate(rng, False))
    return sorted(keys)


def gen_value(rng, i, n):
    if n * 3 // 4 <= i < n * 3 // 4 + 14:
        # A run of incompressible values: RocksDB stores the data block that
        # holds them uncompressed even when compression is enabled (it keeps
        # a compressed block only if it saves at least 1/8 of the size).
        return rng.bytes(rng.between(250, 350))
    if i % 150 == 13:
        # A large value, alternately random bytes and compressible text.
        length = rng.between(1000, 2000)
        return rng.bytes(length) if (i // 150) % 2 == 0 else text(rng, length)
    kind = rng.below(20)
    if kind < 4:
        return b""
    if kind < 13:
        return text(rng, rng.between(1, 24))
    if kind < 17:
        return rng.bytes(rng.between(1, 24))
    return text(rng, rng.between(25, 120))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n", type=int, required=True, help="number of point entries")
    ap.add_argument("--del-every", type=int, default=0,
                    help="turn every K-th point entry into `del` (0 = never)")
    ap.add_argument("--ranges", type=int, default=0,
                    help="number of `range` (DeleteRange) lines to add")
    args = ap.parse_args()
    if args.n < 2:
        ap.error("--n must be >= 2")

    rng = SplitMix64(args.seed)
    keys = gen_keys(rng, args.n)
    lines = []
    for i, key in enumerate(keys):  # sorted key order
        if args.del_every and i % args.del_every == args.del_every - 1:
            lines.append(f"del {key.hex()}")
        else:
            value = gen_value(rng, i, args.n)
            lines.append(f"put {key.hex()} {value.hex()}".rstrip())

    # Range tombstones [start, end), spread evenly over the key space.
    ranges = []
    for r in range(args.ranges):
        i = (r + 1) * args.n // (args.ranges + 1)
        if r == 0:
            # Gap-only range: strictly between keys[i] and keys[i+1], so it
            # covers no point key. Move right until such a gap exists.
            while True:
                if i + 1 >= args.n:
                    sys.exit("gen_kv.py: no gap for a gap-only range tombstone")
                start, end = keys[i] + b"\x00", keys[i] + b"\x00\x00"
                if end < keys[i + 1]:
                    break
                i += 1
        else:
            # Spans point keys keys[i] .. keys[i+3] (end is exclusive).
            start = keys[i]
            end = keys[min(i + 4, args.n - 1)]
        if ranges and start < ranges[-1][1]:
            sys.exit("gen_kv.py: too many --ranges for --n (tombstones overlap)")
        ranges.append((start, end))
    lines += [f"range {start.hex()} {end.hex()}" for start, end in ranges]

    sys.stdout.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
