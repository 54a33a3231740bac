// strata-bench-rocksdb: RocksDB's driver for the comparison workloads of
// shared/workloads/README.md (W2, W3, W4), against Debian's librocksdb-dev
// (RocksDB 7.8). It shares its command line and its JSON output line with
// the Strata and Pebble drivers under bench/:
//
//   strata-bench-rocksdb WORKLOAD INPUT DBDIR [--variant V] [--batch-rows N]
//       [--rounds N] [--seconds S] [--max-seconds S]
//
// WORKLOAD is w1, w2, w3, w4, w5 or micro; INPUT is the datagen file (w1, w2) or "-" (w3, w4
// make their own keys); DBDIR must not exist (a fresh database per run).
// Options are the workloads' common ones: 64 MiB write buffer, 256 MiB LRU
// block cache, Snappy, max_background_jobs = cores, WAL on with
// WriteOptions::sync = false (each write is handed to the OS, never fsynced
// per write). Ingestion uses IngestExternalFile with move_files = true and the
// default verify_checksums_before_ingest = false: the file's footer, properties
// and first and last keys are read, not every block ("ingest_check": "bounds").
//
// Build: bench/rocksdb/build.sh

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/statistics.h>
#include <rocksdb/iterator.h>
#include <rocksdb/listener.h>
#include <rocksdb/table.h>
#include <rocksdb/version.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  std::string workload, input, dir, variant;
  long batch_rows = 1000;
  long rounds = 50;
  double seconds = 30, max_seconds = 120;
};

[[noreturn]] void Die(const std::string& msg) {
  std::cerr << "strata-bench-rocksdb: " << msg << "\n";
  std::exit(1);
}

void Check(const rocksdb::Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

double Num(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') Die("option " + opt + ": \"" + v + "\" is not a number");
  return d;
}

Args Parse(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: strata-bench-rocksdb w1|w2|w3|w4|w5|micro INPUT DBDIR [--variant V] [--batch-rows N] "
                 "[--rounds N] [--seconds S] [--max-seconds S]\n";
    std::exit(2);
  }
  Args a;
  a.workload = argv[1];
  a.input = argv[2];
  a.dir = argv[3];
  for (int i = 4; i < argc; i += 2) {
    std::string opt = argv[i];
    if (i + 1 >= argc) Die("option " + opt + " needs a value");
    std::string v = argv[i + 1];
    if (opt == "--variant") a.variant = v;
    else if (opt == "--batch-rows") a.batch_rows = static_cast<long>(Num(opt, v));
    else if (opt == "--rounds") a.rounds = static_cast<long>(Num(opt, v));
    else if (opt == "--seconds") a.seconds = Num(opt, v);
    else if (opt == "--max-seconds") a.max_seconds = Num(opt, v);
    else Die("unknown option " + opt);
  }
  return a;
}

int Cores() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 2;
}

std::shared_ptr<rocksdb::Statistics> g_stats;

// W5: the largest compaction by input bytes (and its seconds), overall and
// among L0->Lbase ones.
struct CompactionWatch : rocksdb::EventListener {
  std::mutex mu;
  uint64_t big = 0, big_l0 = 0;
  double big_s = 0, big_l0_s = 0;
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& ci) override {
    std::lock_guard<std::mutex> g(mu);
    uint64_t b = ci.stats.total_input_bytes;
    double s = ci.stats.elapsed_micros / 1e6;
    if (b > big) big = b, big_s = s;
    if (ci.base_input_level == 0 && ci.output_level > 0 && b > big_l0) big_l0 = b, big_l0_s = s;
  }
};
std::shared_ptr<CompactionWatch> g_watch;

std::unique_ptr<rocksdb::DB> Open(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) Die(dir + " already exists (each run needs a fresh database)");
  rocksdb::Options options;
  options.create_if_missing = true;
  options.write_buffer_size = 64 << 20;
  options.max_background_jobs = Cores();
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(256 << 20);
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  options.compression = rocksdb::kSnappyCompression;
  if (g_stats) options.statistics = g_stats;
  if (g_watch) options.listeners.push_back(g_watch);
  rocksdb::DB* raw = nullptr;
  Check(rocksdb::DB::Open(options, dir, &raw), "open " + dir);
  return std::unique_ptr<rocksdb::DB>(raw);
}

// enc(int) of kv-spec v1: 8-byte big-endian of (v XOR 0x8000000000000000).
void PutEnc(std::string* dst, int64_t v) {
  uint64_t u = static_cast<uint64_t>(v) ^ 0x8000000000000000ull;
  for (int i = 7; i >= 0; --i) dst->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

long long WriteBytes() {
  std::ifstream in("/proc/self/io");
  std::string k;
  long long v;
  while (in >> k >> v) {
    if (k == "write_bytes:") return v;
  }
  return -1;
}

double Pct(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[static_cast<size_t>((sorted.size() - 1) * p + 0.5)];
}

// figures: a JSON object body, e.g. "\"rows\":1".
void Emit(const Args& a, const std::string& variant, const std::string& figures) {
  std::cout << "{\"engine\":\"rocksdb\",\"version\":\"" << ROCKSDB_MAJOR << "." << ROCKSDB_MINOR
            << "." << ROCKSDB_PATCH << "\",\"workload\":\"" << a.workload << "\",\"variant\":\""
            << variant << "\",\"figures\":{" << figures
            << "},\"options\":{\"memtable_mib\":64,\"cache_mib\":256,\"compression\":\"snappy\","
               "\"background_jobs\":"
            << Cores()
            << ",\"ingest_check\":\"bounds\""
            << "},\"durability\":{\"wal\":true,\"sync_per_write\":false,\"note\":\"WriteOptions::"
               "sync=false: every write is handed to the OS (write system call) before it returns, "
               "never fsynced per write\"}}\n";
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// W2: loads COPY rows (key 0x82 0x01 enc(first column), value = the line)
// with write batches of N rows and a Put of "\x00stats" every 10,000 rows.
// If the first 1,000,000 rows project past --max-seconds, stops there.
void W2(const Args& a) {
  std::vector<std::string> lines;
  {
    std::ifstream in(a.input, std::ios::binary);
    if (!in) Die("cannot open " + a.input);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  auto db = Open(a.dir);
  rocksdb::WriteOptions wo;
  long long wb0 = WriteBytes();
  auto start = Clock::now();
  rocksdb::WriteBatch batch;
  long in_batch = 0;
  size_t done = 0;
  bool capped = false;
  std::string key;
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string& line = lines[n];
    key.assign("\x82\x01", 2);
    char* end = nullptr;
    std::string first = line.substr(0, line.find('\t'));
    long long i = std::strtoll(first.c_str(), &end, 10);
    if (first.empty() || *end != '\0')
      Die(a.input + " line " + std::to_string(n + 1) + ": first column is not an integer");
    PutEnc(&key, i);
    batch.Put(key, line);
    if (++in_batch == a.batch_rows) {
      Check(db->Write(wo, &batch), "write");
      batch.Clear();
      in_batch = 0;
    }
    if ((n + 1) % 10000 == 0) {
      Check(db->Put(wo, std::string("\x00stats", 6), std::to_string(n + 1)), "put stats");
    }
    done = n + 1;
    if (done == 1000000 && lines.size() > done && Since(start) * lines.size() / done > a.max_seconds) {
      capped = true;
      break;
    }
  }
  if (in_batch > 0) Check(db->Write(wo, &batch), "write");
  double secs = Since(start);
  long long wb = WriteBytes() - wb0;
  Check(db->Close(), "close");
  std::ostringstream f;
  f << "\"rows\":" << done << ",\"seconds\":" << secs << ",\"rows_per_s\":" << done / secs
    << ",\"capped\":" << (capped ? "true" : "false") << ",\"write_bytes\":" << wb;
  Emit(a, "batch=" + std::to_string(a.batch_rows), f.str());
}

void WriteSst(const std::string& path, const std::vector<std::string>& keys) {
  rocksdb::Options o;
  o.compression = rocksdb::kSnappyCompression;
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o);
  Check(w.Open(path), "create " + path);
  std::string val(100, 'i');
  for (const auto& k : keys) Check(w.Put(k, val), "sst put");
  Check(w.Finish(), "finish " + path);
}

void Ingest(rocksdb::DB* db, const std::string& path) {
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;
  Check(db->IngestExternalFile({path}, io), "ingest " + path);
}

uint64_t IntProp(rocksdb::DB* db, const std::string& name) {
  uint64_t v = 0;
  db->GetIntProperty(name, &v);
  return v;
}

// W1: the TPC-C stock import by write batches of 1,000 rows (batch-*) or by
// 64 MiB sorted SSTs (ingest-*), then flush and wait until no flush or
// compaction is pending or running; checks a full scan's count and 1,000
// primary rows read back. Stall time is RocksDB's STALL_MICROS ticker.
//
// W5 (the seeds' scenario, RocksDB's equivalent of Strata's `import --mode
// direct`): the ingest method with 16 MiB buffers, each sorted and written
// as two SSTs (primary rows, index entries) ingested in one call, over the
// random-order CSV; adds the largest compactions to W1's figures. RocksDB
// has no L0 sublevels, so its one variant is named `sublevels` only to line
// up with Strata's default.
void W1(const Args& a) {
  bool w5 = a.workload == "w5";
  std::string variant = a.variant.empty() ? (w5 ? "sublevels" : "batch") : a.variant;
  bool ingest = w5 || variant.rfind("ingest", 0) == 0;
  if (w5 && variant != "sublevels") Die("w5 variant must be sublevels (RocksDB has no classic/sublevel switch), not " + variant);
  if (!ingest && variant.rfind("batch", 0) != 0)
    Die("w1 variant must start with batch or ingest, not " + variant);
  size_t limit = w5 ? (16u << 20) : (64u << 20);
  if (w5) g_watch = std::make_shared<CompactionWatch>();
  std::ifstream in(a.input, std::ios::binary);
  if (!in) Die("cannot open " + a.input);
  g_stats = rocksdb::CreateDBStatistics();
  auto db = Open(a.dir);
  std::string scratch = a.dir + ".ssts";
  std::filesystem::create_directories(scratch);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> peak_l0{0};
  std::thread sampler([&] {
    while (!stop.load()) {
      uint64_t n = IntProp(db.get(), "rocksdb.num-files-at-level0");
      if (n > peak_l0.load()) peak_l0.store(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::mt19937_64 rng(7);
  std::vector<std::pair<std::string, std::string>> sample, buf;
  size_t rows = 0, buf_bytes = 0, ssts = 0;
  long long logical = 0;
  rocksdb::WriteOptions wo;
  rocksdb::WriteBatch batch;
  auto flush_buf = [&] {
    std::sort(buf.begin(), buf.end());
    rocksdb::Options o;
    o.compression = rocksdb::kSnappyCompression;
    // W1: one SST a buffer; W5: one per index (primary 0x81 0x01, then
    // index 0x81 0x02), both in one ingest call.
    std::vector<std::string> paths;
    std::unique_ptr<rocksdb::SstFileWriter> w;
    char part = 0;
    for (const auto& e : buf) {
      char p = w5 ? e.first[1] : 0;
      if (!w || p != part) {
        if (w) Check(w->Finish(), "finish " + paths.back());
        w = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), o);
        paths.push_back(scratch + "/" + std::to_string(ssts) + "-" + std::to_string(paths.size()) + ".sst");
        Check(w->Open(paths.back()), "create " + paths.back());
        part = p;
      }
      Check(w->Put(e.first, e.second), "sst put");
    }
    if (w) Check(w->Finish(), "finish " + paths.back());
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;
    Check(db->IngestExternalFile(paths, io), "ingest " + paths.front());
    buf.clear();
    buf_bytes = 0;
    ++ssts;
  };
  long long wb0 = WriteBytes();
  auto start = Clock::now();
  std::string line;
  while (std::getline(in, line)) {
    ++rows;
    size_t c1 = line.find(','), c2 = c1 == std::string::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string::npos) Die(a.input + " line " + std::to_string(rows) + ": fewer than 3 columns");
    char *e1 = nullptr, *e2 = nullptr;
    std::string s1 = line.substr(0, c1), s2 = line.substr(c1 + 1, c2 - c1 - 1);
    long long i = std::strtoll(s1.c_str(), &e1, 10), w = std::strtoll(s2.c_str(), &e2, 10);
    if (s1.empty() || s2.empty() || *e1 || *e2)
      Die(a.input + " line " + std::to_string(rows) + ": s_i_id and s_w_id must be integers");
    std::string p("\x81\x01", 2), x("\x81\x02", 2);
    PutEnc(&p, w);
    PutEnc(&p, i);
    PutEnc(&x, i);
    PutEnc(&x, w);
    logical += p.size() + line.size() + x.size();
    if (sample.size() < 1000) sample.emplace_back(p, line);
    else if (size_t j = rng() % rows; j < 1000) sample[j] = {p, line};
    if (ingest) {
      buf_bytes += p.size() + line.size() + x.size();
      buf.emplace_back(p, line);
      buf.emplace_back(x, "");
      if (buf_bytes >= limit) flush_buf();
    } else {
      batch.Put(p, line);
      batch.Put(x, "");
      if (rows % 1000 == 0) {
        Check(db->Write(wo, &batch), "write");
        batch.Clear();
      }
    }
    if (rows % 10000 == 0) Check(db->Put(wo, std::string("\x00stats", 6), std::to_string(rows)), "put stats");
  }
  if (ingest && !buf.empty()) flush_buf();
  if (batch.Count() > 0) Check(db->Write(wo, &batch), "write");
  double load_s = Since(start);
  Check(db->Flush(rocksdb::FlushOptions()), "flush");
  while (IntProp(db.get(), "rocksdb.compaction-pending") || IntProp(db.get(), "rocksdb.num-running-compactions") ||
         IntProp(db.get(), "rocksdb.num-running-flushes") || IntProp(db.get(), "rocksdb.mem-table-flush-pending"))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  double settle_s = Since(start) - load_s;
  long long wb = WriteBytes() - wb0;
  stop.store(true);
  sampler.join();
  size_t keys = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++keys;
    Check(it->status(), "scan");
  }
  if (keys != 2 * rows + 1) Die("check: a full scan found " + std::to_string(keys) + " keys, expected " + std::to_string(2 * rows + 1));
  for (const auto& e : sample) {
    std::string v;
    if (!db->Get(rocksdb::ReadOptions(), e.first, &v).ok() || v != e.second) Die("check: a primary row read back wrong");
  }
  double stall_s = g_stats->getTickerCount(rocksdb::STALL_MICROS) / 1e6;
  Check(db->Close(), "close");
  std::filesystem::remove_all(scratch);
  uintmax_t size = 0;
  for (const auto& f : std::filesystem::directory_iterator(a.dir))
    if (f.is_regular_file()) size += f.file_size();
  std::ostringstream f;
  f << "\"rows\":" << rows << ",\"load_s\":" << load_s << ",\"settle_s\":" << settle_s
    << ",\"load_settle_s\":" << load_s + settle_s << ",\"write_bytes\":" << wb
    << ",\"logical_bytes\":" << logical << ",\"write_amp\":" << double(wb) / double(logical)
    << ",\"peak_l0_files\":" << peak_l0.load() << ",\"stall_s\":" << stall_s << ",\"size_bytes\":" << size
    << ",\"keys\":" << keys << ",\"ssts\":" << ssts;
  if (w5) {
    std::lock_guard<std::mutex> g(g_watch->mu);
    f << ",\"units\":" << ssts << ",\"peak_l0_sublevels\":" << peak_l0.load()
      << ",\"largest_compaction_bytes\":" << g_watch->big << ",\"largest_compaction_s\":" << g_watch->big_s
      << ",\"largest_l0_compaction_bytes\":" << g_watch->big_l0
      << ",\"largest_l0_compaction_s\":" << g_watch->big_l0_s
      << ",\"largest_l0_compaction_frac\":" << double(g_watch->big_l0) / double(size ? size : 1);
  }
  Emit(a, variant, f.str());
}

std::string W3Key(int64_t k) {
  std::string s("\x83", 1);
  PutEnc(&s, k);
  return s;
}

void W3(const Args& a) {
  std::string variant = a.variant.empty() ? "overlap" : a.variant;
  int64_t base;
  if (variant == "overlap") base = 1000;
  else if (variant == "control") base = 20000;
  else Die("w3 variant must be overlap or control, not " + variant);
  auto db = Open(a.dir);
  std::string scratch = a.dir + ".ssts";
  std::filesystem::create_directories(scratch);
  rocksdb::WriteOptions wo;
  std::string val(100, 'v');
  std::vector<double> lat;
  for (long r = 0; r < a.rounds; ++r) {
    for (int64_t k = 0; k < 10000; ++k) Check(db->Put(wo, W3Key(k), val), "put");
    std::vector<std::string> keys;
    // 1,000 keys spread evenly over [base, base + 6,500).
    for (int64_t i = 0; i < 1000; ++i) keys.push_back(W3Key(base + i * 13 / 2));
    std::string path = scratch + "/" + std::to_string(r) + ".sst";
    WriteSst(path, keys);
    auto t = Clock::now();
    Ingest(db.get(), path);
    lat.push_back(Since(t) * 1e3);
  }
  Check(db->Close(), "close");
  std::filesystem::remove_all(scratch);
  std::sort(lat.begin(), lat.end());
  std::ostringstream f;
  f << "\"rounds\":" << a.rounds << ",\"ingest_ms_p50\":" << Pct(lat, 0.5)
    << ",\"ingest_ms_p99\":" << Pct(lat, 0.99) << ",\"ingest_ms_max\":" << lat.back();
  Emit(a, variant, f.str());
}

void W4(const Args& a) {
  std::string variant = a.variant.empty() ? "overlap" : a.variant;
  char prefix;
  if (variant == "overlap") prefix = '\x84';
  else if (variant == "disjoint") prefix = '\x85';
  else if (variant == "none") prefix = 0;  // the baseline: no ingester
  else Die("w4 variant must be none, disjoint or overlap, not " + variant);
  auto db = Open(a.dir);
  std::string scratch = a.dir + ".ssts";
  std::filesystem::create_directories(scratch);
  std::atomic<bool> stop{false};
  std::vector<double> ing;
  std::thread ingester([&] {
    std::mt19937_64 rng(9);
    for (int round = 0; prefix != 0 && !stop.load(); ++round) {
      auto t0 = Clock::now();
      std::vector<std::string> keys;
      for (int i = 0; i < 5000; ++i) {
        std::string k(17, '\0');
        k[0] = prefix;
        for (int j = 1; j < 17; ++j) k[j] = static_cast<char>(rng());
        keys.push_back(std::move(k));
      }
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      std::string path = scratch + "/ingest-" + std::to_string(round) + ".sst";
      WriteSst(path, keys);
      auto t = Clock::now();
      Ingest(db.get(), path);
      ing.push_back(Since(t) * 1e6);
      auto left = std::chrono::milliseconds(200) - (Clock::now() - t0);
      if (left.count() > 0) std::this_thread::sleep_for(left);
    }
  });
  std::mt19937_64 rng(4);
  rocksdb::WriteOptions wo;
  std::string val(100, 'v');
  std::vector<double> lat;
  auto start = Clock::now();
  auto interval = std::chrono::nanoseconds(1000000000 / 20000);
  for (long n = 1; Since(start) < a.seconds; ++n) {
    std::string k(17, '\0');
    k[0] = '\x84';
    for (int j = 1; j < 17; ++j) k[j] = static_cast<char>(rng());
    auto t = Clock::now();
    Check(db->Put(wo, k, val), "put");
    lat.push_back(Since(t) * 1e6);
    // Pace to 20,000 Puts/s against the schedule, not the last call.
    auto due = start + interval * n;
    if (due > Clock::now()) std::this_thread::sleep_until(due);
  }
  stop.store(true);
  ingester.join();
  Check(db->Close(), "close");
  std::filesystem::remove_all(scratch);
  std::sort(lat.begin(), lat.end());
  std::sort(ing.begin(), ing.end());
  std::ostringstream f;
  f << "\"seconds\":" << a.seconds << ",\"puts\":" << lat.size() << ",\"put_us_p50\":" << Pct(lat, 0.5)
    << ",\"put_us_p99\":" << Pct(lat, 0.99) << ",\"put_us_p999\":" << Pct(lat, 0.999)
    << ",\"put_us_p9999\":" << Pct(lat, 0.9999) << ",\"put_us_max\":" << lat.back()
    << ",\"ingests\":" << ing.size() << ",\"ingest_us_p50\":" << Pct(ing, 0.5)
    << ",\"ingest_us_p99\":" << Pct(ing, 0.99);
  Emit(a, variant, f.str());
}

// micro: the criterion cases of crates/strata/benches/db.rs, as one
// driver run each. puts-N: N threads Put random 16-byte keys with 100-byte
// values for --seconds; get-memtable / get-files: 200,000 such keys loaded
// (get-files: then compacted into table files and read once to warm the
// cache), then one thread Gets them in a scattered order for --seconds.
void Micro(const Args& a) {
  std::string v = a.variant.empty() ? "puts-1" : a.variant;
  auto db = Open(a.dir);
  rocksdb::WriteOptions wo;
  std::string val(100, 'v');
  auto rand_key = [](std::mt19937_64& rng) {
    std::string k(16, '\0');
    for (int j = 0; j < 16; ++j) k[j] = static_cast<char>(rng());
    return k;
  };
  double ops = 0, secs = 0;
  if (v.rfind("puts-", 0) == 0) {
    int threads = std::atoi(v.c_str() + 5);
    if (threads < 1) Die("micro variant puts-N needs N >= 1, not " + v);
    std::atomic<long> total{0};
    auto start = Clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        std::mt19937_64 rng(10 + t);
        long n = 0;
        while (Since(start) < a.seconds) {
          for (int i = 0; i < 100; ++i, ++n) Check(db->Put(wo, rand_key(rng), val), "put");
        }
        total += n;
      });
    }
    for (auto& t : ts) t.join();
    secs = Since(start);
    ops = static_cast<double>(total.load());
  } else if (v == "get-memtable" || v == "get-files") {
    const long n = 200000;
    std::mt19937_64 rng(3);
    std::vector<std::string> keys;
    for (long i = 0; i < n; ++i) {
      keys.push_back(rand_key(rng));
      Check(db->Put(wo, keys.back(), val), "put");
    }
    rocksdb::ReadOptions ro;
    std::string got;
    if (v == "get-files") {
      Check(db->Flush(rocksdb::FlushOptions()), "flush");
      Check(db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr), "compact");
      for (const auto& k : keys) Check(db->Get(ro, k, &got), "warm get");
    }
    size_t i = 0;
    long done = 0;
    auto start = Clock::now();
    while (Since(start) < a.seconds) {
      for (int j = 0; j < 1000; ++j, ++done) {
        i = (i + 7919) % n;
        Check(db->Get(ro, keys[i], &got), "get");
      }
    }
    secs = Since(start);
    ops = static_cast<double>(done);
  } else {
    Die("micro variant must be puts-N, get-memtable or get-files, not " + v);
  }
  Check(db->Close(), "close");
  std::ostringstream f;
  f << "\"seconds\":" << secs << ",\"ops\":" << ops << ",\"ops_per_s\":" << ops / secs
    << ",\"ns_per_op\":" << secs * 1e9 / ops;
  Emit(a, v, f.str());
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  if (a.workload == "w1") W1(a);
  else if (a.workload == "w2") W2(a);
  else if (a.workload == "w3") W3(a);
  else if (a.workload == "w4") W4(a);
  else if (a.workload == "w5") W1(a);
  else if (a.workload == "micro") Micro(a);
  else Die("unknown workload " + a.workload + " (w1, w2, w3, w4, w5, micro)");
  return 0;
}
