// Generates Bloom filter reference fixtures with the installed RocksDB 7.8:
// for each case it writes an SST with SstFileWriter (block-based table,
// NewBloomFilterPolicy(bits_per_key), whole-key filtering, the given
// format_version), cuts the raw filter block out of the file, and records
// what RocksDB's own filter reader answers for a set of absent "probe" keys.
//
// Rebuild the committed fixtures (from the repository root; needs the Debian
// package librocksdb-dev):
//
//   g++ -std=c++17 -O2 -o /tmp/bloom_vectors tools/rocksdb-compat/bloom_vectors.cc -lrocksdb
//   /tmp/bloom_vectors crates/strata/tests/fixtures/rocksdb
//
// Files written into that directory:
//   bloom_keys_main.txt, bloom_keys_tiny1.txt, bloom_keys_tiny3.txt,
//   bloom_probes.txt   one key per line, lower-case hex (empty line = empty
//                      key); key files are sorted, probes are absent from all
//   bloom_<case>.bin   the filter block contents exactly as stored in the SST
//                      (without the 5-byte block trailer)
//   bloom_cases.txt    one line per case:
//                        <case> <keys file> <bits_per_key> <format_version>
//                        <filter file> <answers>
//                      where answers has one character per probe key:
//                        1 = RocksDB's filter said "may match",
//                        0 = it said "definitely not",
//                        - = not consulted (probe outside the file's key
//                            range, so RocksDB skipped the file)
//
// The filter block is found without any RocksDB internals: the 53-byte
// footer (checksum type, metaindex and index BlockHandles as varint64 pairs
// padded to 40 bytes, format_version, magic) points at the metaindex block,
// whose entry "fullfilter.rocksdb.BuiltinBloomFilter" is the filter's
// BlockHandle. RocksDB's answers come from a throwaway DB that ingests the
// SST, using the perf context counters bloom_sst_hit_count/miss_count.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"

using namespace rocksdb;

static void Die(const std::string& what) {
  std::fprintf(stderr, "bloom_vectors: %s\n", what.c_str());
  std::exit(1);
}

static void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

struct Lcg {
  uint64_t s;
  explicit Lcg(uint64_t seed) : s(seed) {}
  uint32_t Next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s >> 33);
  }
};

// Keys of varied shapes: mostly short binary or decimal-ish keys, a few long
// ones that take the >240-byte hash path.
static std::string RandomKey(Lcg& r) {
  uint32_t kind = r.Next() % 100;
  std::string k;
  if (kind < 1) {
    size_t len = 241 + r.Next() % 80;
    for (size_t i = 0; i < len; ++i) k.push_back(static_cast<char>(r.Next()));
  } else if (kind < 50) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "user%08u", r.Next() % 100000000u);
    k = buf;
    if (r.Next() % 4 == 0) k.push_back(static_cast<char>(r.Next()));
  } else {
    size_t len = 1 + r.Next() % 24;
    for (size_t i = 0; i < len; ++i) k.push_back(static_cast<char>(r.Next()));
  }
  return k;
}

static std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) {
    o.push_back(d[c >> 4]);
    o.push_back(d[c & 15]);
  }
  return o;
}

static void WriteLines(const std::string& path,
                       const std::vector<std::string>& keys) {
  std::ofstream f(path, std::ios::binary);
  for (const auto& k : keys) f << Hex(k) << "\n";
  if (!f) Die("write " + path);
}

static std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f) Die("read " + path);
  return ss.str();
}

static bool GetVarint(const std::string& b, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && *pos < b.size(); shift += 7) {
    uint8_t c = static_cast<uint8_t>(b[(*pos)++]);
    *v |= uint64_t(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

static uint32_t Fixed32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);  // little-endian host
  return v;
}

// Returns the raw filter block bytes (no trailer) of the SST at `path`.
static std::string ExtractFilter(const std::string& path) {
  const std::string file = ReadFile(path);
  const size_t kFooter = 53;
  if (file.size() < kFooter) Die("file too short");
  size_t pos = file.size() - kFooter + 1;  // skip checksum type
  uint64_t mi_off, mi_size;
  if (!GetVarint(file, &pos, &mi_off) || !GetVarint(file, &pos, &mi_size))
    Die("bad footer");
  if (mi_off + mi_size > file.size()) Die("bad metaindex handle");
  // Metaindex blocks are never compressed; `block` excludes the trailer.
  const std::string block = file.substr(mi_off, mi_size);
  uint32_t num_restarts = Fixed32(block, block.size() - 4);
  size_t limit = block.size() - 4 - 4 * size_t(num_restarts);
  std::string key;
  pos = 0;
  while (pos < limit) {
    uint64_t shared, non_shared, vlen;
    if (!GetVarint(block, &pos, &shared) ||
        !GetVarint(block, &pos, &non_shared) ||
        !GetVarint(block, &pos, &vlen))
      Die("bad metaindex entry");
    key = key.substr(0, shared) + block.substr(pos, non_shared);
    pos += non_shared;
    std::string value = block.substr(pos, vlen);
    pos += vlen;
    if (key == "fullfilter.rocksdb.BuiltinBloomFilter") {
      size_t vp = 0;
      uint64_t off, size;
      if (!GetVarint(value, &vp, &off) || !GetVarint(value, &vp, &size))
        Die("bad filter handle");
      if (off + size > file.size()) Die("filter handle out of range");
      return file.substr(off, size);
    }
  }
  Die("no fullfilter.rocksdb.BuiltinBloomFilter in " + path);
  return "";
}

static Options MakeOptions(double bits_per_key, int format_version) {
  BlockBasedTableOptions t;
  t.filter_policy.reset(NewBloomFilterPolicy(bits_per_key));
  t.format_version = format_version;
  t.whole_key_filtering = true;
  Options o;
  o.table_factory.reset(NewBlockBasedTableFactory(t));
  o.create_if_missing = true;
  return o;
}

struct KeySet {
  std::string name;
  std::vector<std::string> keys;  // sorted, unique
};

static std::string Answers(const Options& opts, const std::string& sst,
                           const KeySet& ks,
                           const std::vector<std::string>& probes,
                           const std::string& scratch) {
  const std::string dbpath = scratch + "/db";
  Check(DestroyDB(dbpath, opts), "destroy");
  DB* db = nullptr;
  Check(DB::Open(opts, dbpath, &db), "open db");
  IngestExternalFileOptions ifo;
  Check(db->IngestExternalFile({sst}, ifo), "ingest");
  SetPerfLevel(PerfLevel::kEnableCount);
  auto filter_answer = [&](const std::string& k) -> char {
    get_perf_context()->Reset();
    std::string v;
    Status s = db->Get(ReadOptions(), k, &v);
    if (!s.ok() && !s.IsNotFound()) Die("get: " + s.ToString());
    uint64_t hit = get_perf_context()->bloom_sst_hit_count;
    uint64_t miss = get_perf_context()->bloom_sst_miss_count;
    if (hit + miss > 1) Die("filter consulted twice");
    return hit ? '1' : (miss ? '0' : '-');
  };
  // Sanity: every added key must reach the filter and match.
  for (const auto& k : ks.keys) {
    if (filter_answer(k) != '1') Die("added key not matched in " + ks.name);
  }
  std::string out;
  for (const auto& p : probes) out.push_back(filter_answer(p));
  SetPerfLevel(PerfLevel::kDisable);
  delete db;
  Check(DestroyDB(dbpath, opts), "destroy");
  return out;
}

int main(int argc, char** argv) {
  if (argc != 2) Die("usage: bloom_vectors <output dir>");
  const std::string out = argv[1];
  char tmpl[] = "/tmp/bloom_vectors.XXXXXX";
  if (!mkdtemp(tmpl)) Die("mkdtemp");
  const std::string scratch = tmpl;

  std::set<std::string> all;
  KeySet main_set{"main", {}};
  {
    Lcg r(42);
    std::set<std::string> s;
    while (s.size() < 2000) s.insert(RandomKey(r));
    main_set.keys.assign(s.begin(), s.end());
    all.insert(s.begin(), s.end());
  }
  KeySet tiny1{"tiny1", {"a"}};
  KeySet tiny3{"tiny3", {std::string(), std::string("hello"),
                         std::string("\xff\x00\x7f", 3)}};
  all.insert(tiny1.keys.begin(), tiny1.keys.end());
  all.insert(tiny3.keys.begin(), tiny3.keys.end());

  std::vector<std::string> probes;
  {
    Lcg r(4242);
    std::set<std::string> seen;
    while (probes.size() < 1000) {
      std::string k = RandomKey(r);
      if (all.count(k) || !seen.insert(k).second) continue;
      probes.push_back(k);
    }
  }

  WriteLines(out + "/bloom_keys_main.txt", main_set.keys);
  WriteLines(out + "/bloom_keys_tiny1.txt", tiny1.keys);
  WriteLines(out + "/bloom_keys_tiny3.txt", tiny3.keys);
  WriteLines(out + "/bloom_probes.txt", probes);

  struct Case {
    const KeySet* ks;
    double bpk;
    int format_version;
  };
  const Case cases[] = {
      {&main_set, 10, 5}, {&main_set, 1, 5},   {&main_set, 5, 5},
      {&main_set, 7.5, 5}, {&main_set, 20, 5}, {&main_set, 30, 5},
      {&main_set, 60, 5}, {&tiny1, 10, 5},     {&tiny3, 10, 5},
      // Just below 6.6405: RocksDB's "+ 0.500001" nudge turns it into 6641
      // millibits (5 probes) where plain rounding would give 6640 (4).
      {&main_set, 6.6404999995, 5},
      {&main_set, 10, 4}, {&tiny3, 10, 4},
  };

  std::ofstream manifest(out + "/bloom_cases.txt", std::ios::binary);
  manifest << "# generated by tools/rocksdb-compat/bloom_vectors.cc; "
              "<case> <keys> <bits_per_key> <format_version> <filter> "
              "<answers for bloom_probes.txt>\n";
  for (const Case& c : cases) {
    char name[64];
    std::snprintf(name, sizeof(name), "%s_%.11gbpk_fv%d", c.ks->name.c_str(),
                  c.bpk, c.format_version);
    const Options opts = MakeOptions(c.bpk, c.format_version);
    const std::string sst = scratch + "/" + name + ".sst";
    SstFileWriter w(EnvOptions(), opts);
    Check(w.Open(sst), "sst open");
    for (const auto& k : c.ks->keys) Check(w.Put(k, "v"), "sst put");
    Check(w.Finish(), "sst finish");

    const std::string filter = ExtractFilter(sst);
    const std::string bin = std::string("bloom_") + name + ".bin";
    {
      std::ofstream f(out + "/" + bin, std::ios::binary);
      f.write(filter.data(), filter.size());
      if (!f) Die("write " + bin);
    }
    const std::string answers = Answers(opts, sst, *c.ks, probes, scratch);
    std::remove(sst.c_str());
    manifest << name << " bloom_keys_" << c.ks->name << ".txt "
             << std::setprecision(17) << c.bpk << " "
             << c.format_version << " " << bin << " " << answers << "\n";
    std::fprintf(stderr, "%s: %zu filter bytes\n", name, filter.size());
  }
  if (!manifest) Die("write manifest");
  rmdir(scratch.c_str());
  return 0;
}
