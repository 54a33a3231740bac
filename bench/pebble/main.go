// Command strata-bench-pebble runs the comparison workloads of
// shared/workloads/README.md (W2, W3, W4) on Pebble v2 and prints one JSON
// line per run, in the contract every driver under bench/ shares:
//
//	strata-bench-pebble WORKLOAD INPUT DBDIR [--variant V] [--batch-rows N]
//	    [--rounds N] [--seconds S] [--max-seconds S]
//
// WORKLOAD is w1, w2, w3, w4 or w5; INPUT is the datagen file (w1, w2, w5) or "-" (w3, w4
// generate their keys); DBDIR must not exist (a fresh database per run).
// Options are the workloads' common ones: 64 MiB memtable, 256 MiB block
// cache, Snappy, compaction concurrency = cores, WAL on without per-write
// sync (pebble.NoSync), and the newest format major version so flushable
// ingestion and L0 sublevels are on. Ingest reads a file's properties and
// its first and last keys, not every block (Experimental.ValidateOnIngest
// is off by default): "ingest_check": "bounds", as the other drivers state.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

type args struct {
	workload, input, dir, variant string
	batchRows, rounds             int
	seconds, maxSeconds           float64
}

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "strata-bench-pebble: "+format+"\n", a...)
	os.Exit(1)
}

func parse() args {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: strata-bench-pebble w1|w2|w3|w4 INPUT DBDIR [--variant V] [--batch-rows N] [--rounds N] [--seconds S] [--max-seconds S]")
		os.Exit(2)
	}
	a := args{workload: os.Args[1], input: os.Args[2], dir: os.Args[3],
		batchRows: 1000, rounds: 50, seconds: 30, maxSeconds: 120}
	rest := os.Args[4:]
	for i := 0; i < len(rest); i += 2 {
		if i+1 >= len(rest) {
			die("option %s needs a value", rest[i])
		}
		v := rest[i+1]
		var err error
		switch rest[i] {
		case "--variant":
			a.variant = v
		case "--batch-rows":
			a.batchRows, err = strconv.Atoi(v)
		case "--rounds":
			a.rounds, err = strconv.Atoi(v)
		case "--seconds":
			a.seconds, err = strconv.ParseFloat(v, 64)
		case "--max-seconds":
			a.maxSeconds, err = strconv.ParseFloat(v, 64)
		default:
			die("unknown option %s", rest[i])
		}
		if err != nil {
			die("option %s: %q is not a number", rest[i], v)
		}
	}
	return a
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/cockroachdb/pebble/v2" {
				return m.Version
			}
		}
	}
	return "unknown"
}

func open(dir string) *pebble.DB { return openWith(dir, nil) }

// compactionLog (env STRATA_BENCH_COMPACTION_LOG=1): W1/W5 print one line
// a compaction and the final metrics to stderr, for diagnosis.
var compactionLog = os.Getenv("STRATA_BENCH_COMPACTION_LOG") == "1"

func openWith(dir string, el *pebble.EventListener) *pebble.DB {
	if _, err := os.Stat(dir); err == nil {
		die("%s already exists (each run needs a fresh database)", dir)
	}
	opts := &pebble.Options{
		MemTableSize:       64 << 20,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		EventListener:      el,
	}
	cache := pebble.NewCache(256 << 20)
	opts.Cache = cache
	cores := runtime.NumCPU()
	opts.CompactionConcurrencyRange = func() (int, int) { return 1, cores }
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		return pebble.UniformDBCompressionSettings(sstable.SnappyCompression)
	})
	db, err := pebble.Open(dir, opts)
	cache.Unref()
	if err != nil {
		die("open %s: %v", dir, err)
	}
	return db
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})      {}
func (quietLogger) Errorf(f string, a ...interface{}) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (quietLogger) Fatalf(f string, a ...interface{}) { die(f, a...) }

func enc(v int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v)^0x8000000000000000)
	return b[:]
}

func writeBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p+0.5)]
}

func emit(a args, variant string, figures map[string]any) {
	line := map[string]any{
		"engine": "pebble", "version": version(), "workload": a.workload,
		"variant": variant, "figures": figures,
		"options": map[string]any{"memtable_mib": 64, "cache_mib": 256, "compression": "snappy",
			"background_jobs": runtime.NumCPU(), "format": "FormatNewest", "ingest_check": "bounds"},
		"durability": map[string]any{"wal": true, "sync_per_write": false,
			"note": "pebble.NoSync: the WAL is written by Pebble's flusher goroutine, never fsynced per write"},
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
}

func w2(a args) {
	f, err := os.Open(a.input)
	if err != nil {
		die("open %s: %v", a.input, err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		die("read %s: %v", a.input, err)
	}
	db := open(a.dir)
	wb0 := writeBytes()
	start := time.Now()
	b := db.NewBatch()
	inBatch, done, capped := 0, 0, false
	// One key buffer for all rows (Set copies it), as the Strata driver
	// keeps its key on the stack.
	var key [10]byte
	for n, line := range lines {
		tab := strings.IndexByte(string(line), '\t')
		if tab < 0 {
			tab = len(line)
		}
		i, err := strconv.ParseInt(string(line[:tab]), 10, 64)
		if err != nil {
			die("%s line %d: first column is not an integer", a.input, n+1)
		}
		key[0], key[1] = 0x82, 0x01
		copy(key[2:], enc(i))
		if err := b.Set(key[:], line, nil); err != nil {
			die("batch: %v", err)
		}
		inBatch++
		if inBatch == a.batchRows {
			if err := b.Commit(pebble.NoSync); err != nil {
				die("commit: %v", err)
			}
			b.Close()
			b = db.NewBatch()
			inBatch = 0
		}
		if (n+1)%10000 == 0 {
			if err := db.Set([]byte("\x00stats"), []byte(strconv.Itoa(n+1)), pebble.NoSync); err != nil {
				die("put stats: %v", err)
			}
		}
		done = n + 1
		if done == 1000000 && len(lines) > done &&
			time.Since(start).Seconds()*float64(len(lines))/float64(done) > a.maxSeconds {
			capped = true
			break
		}
	}
	if inBatch > 0 {
		if err := b.Commit(pebble.NoSync); err != nil {
			die("commit: %v", err)
		}
	}
	b.Close()
	secs := time.Since(start).Seconds()
	wb := writeBytes() - wb0
	if err := db.Close(); err != nil {
		die("close: %v", err)
	}
	emit(a, fmt.Sprintf("batch=%d", a.batchRows), map[string]any{
		"rows": done, "seconds": secs, "rows_per_s": float64(done) / secs, "capped": capped,
		"write_bytes": wb,
	})
}

func writeSst(db *pebble.DB, path string, keys [][]byte) {
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		die("create %s: %v", path, err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
		TableFormat: db.TableFormat(), Compression: sstable.SnappyCompression,
	})
	val := make([]byte, 100)
	for i := range val {
		val[i] = 'i'
	}
	for _, k := range keys {
		if err := w.Set(k, val); err != nil {
			die("sst %s: %v", path, err)
		}
	}
	if err := w.Close(); err != nil {
		die("sst %s: %v", path, err)
	}
}

// stockKVs returns the primary and index keys of one TPC-C stock CSV row.
func stockKVs(line []byte, path string, n int) ([]byte, []byte) {
	cols := strings.SplitN(string(line), ",", 3)
	if len(cols) < 3 {
		die("%s line %d: fewer than 3 columns", path, n)
	}
	i, err1 := strconv.ParseInt(cols[0], 10, 64)
	w, err2 := strconv.ParseInt(cols[1], 10, 64)
	if err1 != nil || err2 != nil {
		die("%s line %d: s_i_id and s_w_id must be integers", path, n)
	}
	p := append(append([]byte{0x81, 0x01}, enc(w)...), enc(i)...)
	x := append(append([]byte{0x81, 0x02}, enc(i)...), enc(w)...)
	return p, x
}

func dirBytes(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

type kv struct{ k, v []byte }

// w1: the TPC-C stock import by write batches of 1,000 rows (batch-*) or by
// 64 MiB sorted SSTs (ingest-*), then flush and settle (no compaction in
// progress); checks a full scan's count and 1,000
// primary rows read back.
//
// w5 (the seeds' scenario, Pebble's equivalent of Strata's `import --mode
// direct`): the ingest method with 16 MiB buffers, each sorted and written
// as two SSTs (primary rows, index entries) ingested in one call, over the
// random-order CSV; adds the largest compactions to W1's figures. Pebble's
// L0 sublevels and flush splitting are always on (FormatNewest), so its one
// variant is `sublevels`.
func w1(a args) {
	w5 := a.workload == "w5"
	variant := a.variant
	if variant == "" {
		variant = "batch"
		if w5 {
			variant = "sublevels"
		}
	}
	if w5 && variant != "sublevels" {
		die("w5 variant must be sublevels (Pebble's L0 sublevels are always on), not %q", variant)
	}
	ingest := w5 || strings.HasPrefix(variant, "ingest")
	if !ingest && !strings.HasPrefix(variant, "batch") {
		die("w1 variant must start with batch or ingest, not %q", variant)
	}
	limit := 64 << 20
	if w5 {
		limit = 16 << 20
	}
	// The largest compaction by input bytes (and its seconds), overall and
	// among L0->Lbase ones.
	var bigMu sync.Mutex
	var big, bigL0 uint64
	var bigS, bigL0S float64
	f, err := os.Open(a.input)
	if err != nil {
		die("open %s: %v", a.input, err)
	}
	var stallNs atomic.Int64
	var stallStart atomic.Int64
	el := &pebble.EventListener{
		WriteStallBegin: func(pebble.WriteStallBeginInfo) { stallStart.Store(time.Now().UnixNano()) },
		WriteStallEnd: func() {
			if s := stallStart.Swap(0); s != 0 {
				stallNs.Add(time.Now().UnixNano() - s)
			}
		},
		CompactionEnd: func(ci pebble.CompactionInfo) {
			if ci.Err != nil || ci.Reason == "move" || len(ci.Input) == 0 {
				return
			}
			var in uint64
			for _, l := range ci.Input {
				for _, t := range l.Tables {
					in += t.Size
				}
			}
			s := ci.TotalDuration.Seconds()
			if compactionLog {
				// One line a compaction for diagnosis (W5's write
				// amplification by level transition): never on stdout.
				var startIn, outIn, out uint64
				for _, l := range ci.Input {
					for _, t := range l.Tables {
						if l.Level == ci.Input[0].Level {
							startIn += t.Size
						} else {
							outIn += t.Size
						}
					}
				}
				for _, t := range ci.Output.Tables {
					out += t.Size
				}
				fmt.Fprintf(os.Stderr, "compaction %s L%d->L%d files=%d start_in=%d out_level_in=%d out=%d\n",
					ci.Reason, ci.Input[0].Level, ci.Output.Level, len(ci.Input[0].Tables), startIn, outIn, out)
			}
			bigMu.Lock()
			defer bigMu.Unlock()
			if in > big {
				big, bigS = in, s
			}
			if ci.Input[0].Level == 0 && ci.Output.Level > 0 && in > bigL0 {
				bigL0, bigL0S = in, s
			}
		},
	}
	db := openWith(a.dir, el)
	scratch := a.dir + ".ssts"
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		die("mkdir %s: %v", scratch, err)
	}
	defer os.RemoveAll(scratch)
	// L0 depth sampled every 100 ms.
	var peakFiles, peakSub atomic.Int64
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			m := db.Metrics()
			if n := m.Levels[0].TablesCount; n > peakFiles.Load() {
				peakFiles.Store(n)
			}
			if n := int64(m.Levels[0].Sublevels); n > peakSub.Load() {
				peakSub.Store(n)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	rng := rand.New(rand.NewSource(7))
	var sample []kv
	rows, logical, bufBytes, ssts := 0, int64(0), 0, 0
	var buf []kv
	b := db.NewBatch()
	flushBuf := func() {
		sort.Slice(buf, func(i, j int) bool { return string(buf[i].k) < string(buf[j].k) })
		// w1: one SST a buffer; w5: one per index (primary 0x81 0x01, then
		// index 0x81 0x02), both in one ingest call.
		var paths []string
		var w *sstable.Writer
		part := byte(0)
		closeW := func() {
			if w != nil {
				if err := w.Close(); err != nil {
					die("sst: %v", err)
				}
			}
		}
		for _, e := range buf {
			p := byte(0)
			if w5 {
				p = e.k[1]
			}
			if w == nil || p != part {
				closeW()
				path := filepath.Join(scratch, fmt.Sprintf("%d-%d.sst", ssts, len(paths)))
				ff, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
				if err != nil {
					die("create %s: %v", path, err)
				}
				w = sstable.NewWriter(objstorageprovider.NewFileWritable(ff), sstable.WriterOptions{
					TableFormat: db.TableFormat(), Compression: sstable.SnappyCompression,
				})
				paths = append(paths, path)
				part = p
			}
			if err := w.Set(e.k, e.v); err != nil {
				die("sst: %v", err)
			}
		}
		closeW()
		if err := db.Ingest(context.Background(), paths); err != nil {
			die("ingest: %v", err)
		}
		buf = buf[:0]
		bufBytes = 0
		ssts++
	}
	wb0 := writeBytes()
	start := time.Now()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		rows++
		p, x := stockKVs(line, a.input, rows)
		logical += int64(len(p) + len(line) + len(x))
		if len(sample) < 1000 {
			sample = append(sample, kv{p, line})
		} else if j := rng.Intn(rows); j < 1000 {
			sample[j] = kv{p, line}
		}
		if ingest {
			buf = append(buf, kv{p, line}, kv{x, nil})
			bufBytes += len(p) + len(line) + len(x)
			if bufBytes >= limit {
				flushBuf()
			}
		} else {
			_ = b.Set(p, line, nil)
			_ = b.Set(x, nil, nil)
			if rows%1000 == 0 {
				if err := b.Commit(pebble.NoSync); err != nil {
					die("commit: %v", err)
				}
				b.Close()
				b = db.NewBatch()
			}
		}
		if rows%10000 == 0 {
			if err := db.Set([]byte("\x00stats"), []byte(strconv.Itoa(rows)), pebble.NoSync); err != nil {
				die("put stats: %v", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		die("read %s: %v", a.input, err)
	}
	if ingest && len(buf) > 0 {
		flushBuf()
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		die("commit: %v", err)
	}
	b.Close()
	loadS := time.Since(start).Seconds()
	if err := db.Flush(); err != nil {
		die("flush: %v", err)
	}
	// Quiet: no flush or compaction running in three samples 100 ms apart
	// (Pebble reports no "pending" figure, and its estimated debt can stay
	// above zero while no compaction is due).
	// settle_s ends at the first of those samples.
	var quietAt time.Time
	for quiet := 0; quiet < 3; {
		m := db.Metrics()
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			if quiet == 0 {
				quietAt = time.Now()
			}
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	settleS := quietAt.Sub(start).Seconds() - loadS
	if compactionLog {
		fmt.Fprintf(os.Stderr, "%s\n", db.Metrics())
	}
	wb := writeBytes() - wb0
	close(done)
	sampler.Wait()
	it, err := db.NewIter(nil)
	if err != nil {
		die("iter: %v", err)
	}
	keys := 0
	for it.First(); it.Valid(); it.Next() {
		keys++
	}
	if err := it.Close(); err != nil {
		die("scan: %v", err)
	}
	if keys != 2*rows+1 {
		die("check: a full scan found %d keys, expected %d", keys, 2*rows+1)
	}
	for _, e := range sample {
		v, closer, err := db.Get(e.k)
		if err != nil || string(v) != string(e.v) {
			die("check: a primary row read back wrong")
		}
		closer.Close()
	}
	if err := db.Close(); err != nil {
		die("close: %v", err)
	}
	size := dirBytes(a.dir)
	figures := map[string]any{
		"rows": rows, "load_s": loadS, "settle_s": settleS, "load_settle_s": loadS + settleS,
		"write_bytes": wb, "logical_bytes": logical, "write_amp": float64(wb) / float64(logical),
		"peak_l0_files": peakFiles.Load(), "peak_l0_sublevels": peakSub.Load(),
		"stall_s": float64(stallNs.Load()) / 1e9, "size_bytes": size, "keys": keys, "ssts": ssts,
	}
	if w5 {
		bigMu.Lock()
		figures["units"] = ssts
		figures["largest_compaction_bytes"], figures["largest_compaction_s"] = big, bigS
		figures["largest_l0_compaction_bytes"], figures["largest_l0_compaction_s"] = bigL0, bigL0S
		figures["largest_l0_compaction_frac"] = float64(bigL0) / float64(max(size, 1))
		bigMu.Unlock()
	}
	emit(a, variant, figures)
}

func w3key(k int64) []byte { return append([]byte{0x83}, enc(k)...) }

func w3(a args) {
	variant := a.variant
	if variant == "" {
		variant = "overlap"
	}
	base := int64(1000)
	if variant == "control" {
		base = 20000
	} else if variant != "overlap" {
		die("w3 variant must be overlap or control, not %q", variant)
	}
	db := open(a.dir)
	scratch := a.dir + ".ssts"
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		die("mkdir %s: %v", scratch, err)
	}
	defer os.RemoveAll(scratch)
	val := make([]byte, 100)
	for i := range val {
		val[i] = 'v'
	}
	var lat []float64
	for r := 0; r < a.rounds; r++ {
		for k := int64(0); k < 10000; k++ {
			if err := db.Set(w3key(k), val, pebble.NoSync); err != nil {
				die("put: %v", err)
			}
		}
		keys := make([][]byte, 1000)
		for i := range keys {
			// 1,000 keys spread evenly over [base, base + 6,500).
			keys[i] = w3key(base + int64(i)*13/2)
		}
		path := filepath.Join(scratch, fmt.Sprintf("%d.sst", r))
		writeSst(db, path, keys)
		t := time.Now()
		if err := db.Ingest(context.Background(), []string{path}); err != nil {
			die("ingest: %v", err)
		}
		lat = append(lat, time.Since(t).Seconds()*1e3)
	}
	if err := db.Close(); err != nil {
		die("close: %v", err)
	}
	sort.Float64s(lat)
	emit(a, variant, map[string]any{
		"rounds": a.rounds, "ingest_ms_p50": pct(lat, 0.5), "ingest_ms_p99": pct(lat, 0.99),
		"ingest_ms_max": lat[len(lat)-1],
	})
}

func w4(a args) {
	variant := a.variant
	if variant == "" {
		variant = "overlap"
	}
	prefix := byte(0x84)
	if variant == "disjoint" {
		prefix = 0x85
	} else if variant == "none" {
		prefix = 0 // the baseline: no ingester
	} else if variant != "overlap" {
		die("w4 variant must be none, disjoint or overlap, not %q", variant)
	}
	db := open(a.dir)
	scratch := a.dir + ".ssts"
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		die("mkdir %s: %v", scratch, err)
	}
	defer os.RemoveAll(scratch)
	var stop atomic.Bool
	var ingLat []float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(9))
		for round := 0; prefix != 0 && !stop.Load(); round++ {
			t0 := time.Now()
			keys := make([][]byte, 0, 5000)
			for i := 0; i < 5000; i++ {
				k := make([]byte, 17)
				k[0] = prefix
				rng.Read(k[1:])
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool { return string(keys[i]) < string(keys[j]) })
			path := filepath.Join(scratch, fmt.Sprintf("ingest-%d.sst", round))
			writeSst(db, path, keys)
			t := time.Now()
			if err := db.Ingest(context.Background(), []string{path}); err != nil {
				die("ingest: %v", err)
			}
			ingLat = append(ingLat, float64(time.Since(t).Nanoseconds())/1e3)
			if d := 200*time.Millisecond - time.Since(t0); d > 0 {
				time.Sleep(d)
			}
		}
	}()
	rng := rand.New(rand.NewSource(4))
	val := make([]byte, 100)
	for i := range val {
		val[i] = 'v'
	}
	var lat []float64
	start := time.Now()
	total := time.Duration(a.seconds * float64(time.Second))
	interval := time.Second / 20000
	for n := int64(1); time.Since(start) < total; n++ {
		k := make([]byte, 17)
		k[0] = 0x84
		rng.Read(k[1:])
		t := time.Now()
		if err := db.Set(k, val, pebble.NoSync); err != nil {
			die("put: %v", err)
		}
		lat = append(lat, float64(time.Since(t).Nanoseconds())/1e3)
		// Pace to 20,000 Puts/s against the schedule, not the last call.
		if wait := time.Duration(n)*interval - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := db.Close(); err != nil {
		die("close: %v", err)
	}
	sort.Float64s(lat)
	sort.Float64s(ingLat)
	emit(a, variant, map[string]any{
		"seconds": a.seconds, "puts": len(lat),
		"put_us_p50": pct(lat, 0.5), "put_us_p99": pct(lat, 0.99), "put_us_p999": pct(lat, 0.999),
		"put_us_p9999": pct(lat, 0.9999), "put_us_max": lat[len(lat)-1],
		"ingests": len(ingLat), "ingest_us_p50": pct(ingLat, 0.5), "ingest_us_p99": pct(ingLat, 0.99),
	})
}

func main() {
	a := parse()
	switch a.workload {
	case "w1":
		w1(a)
	case "w2":
		w2(a)
	case "w3":
		w3(a)
	case "w4":
		w4(a)
	case "w5":
		w1(a)
	default:
		die("unknown workload %q (w1, w2, w3, w4, w5)", a.workload)
	}
}
