// strata-rocksdb-compat: a small command-line bridge to RocksDB (7.8.x) used to
// check that Strata's SST files and RocksDB's block-based tables are
// compatible in both directions.
//
// All keys and values on stdin/stdout are lowercase hex so that arbitrary
// binary data survives line-oriented text. An empty value is written as an
// empty hex string; on output a line then consists of the key alone (no
// trailing space), and on input a missing value means "empty".
//
// Subcommands
// -----------
//   write OUT.sst [--compression none|snappy|lz4|zstd] [--bloom BITS_PER_KEY]
//                 [--checksum crc32c|xxh3] [--block-size N] [--prefix-len N]
//                 [--host-id STR]
//       Reads `put HEXKEY HEXVALUE`, `del HEXKEY` and `range HEXSTART HEXEND`
//       lines from stdin (point keys strictly increasing) and writes them with
//       rocksdb::SstFileWriter. Options not given on the command line keep
//       RocksDB's defaults (compression: snappy, checksum: the
//       BlockBasedTableOptions default, no filter). format_version is pinned
//       to 5. --bloom N adds a full Bloom filter with N bits per key;
//       --prefix-len N sets a fixed-length prefix extractor, which also puts
//       key prefixes into the filter (and implies --bloom 10 unless --bloom
//       is given); --host-id sets the rocksdb.creating.host.identity
//       property (default: the hostname). Prints one summary line:
//         OUT.sst file_size=N num_entries=N num_range_del_entries=N
//
//   scan [--with-tombstones] FILE.sst
//       Opens FILE with rocksdb::SstFileReader and iterates it with
//       verify_checksums=true, printing each visible point entry as
//       `HEXKEY HEXVALUE`. Point deletions are hidden by RocksDB's iterator;
//       range tombstones are NOT applied by SstFileReader (covered keys are
//       still printed). A summary goes to stderr. With --with-tombstones the
//       output instead uses the `write` input syntax: all point entries in
//       key order (`put K V` / `del K`, obtained by ingesting a copy of the
//       file into a scratch DB and listing every internal key with
//       GetAllKeyVersions), then all range tombstones (`range S E`, read by
//       RocksDB's sst_dump code in raw mode, as fragmented by RocksDB).
//       Any error: message on stderr, exit status 1.
//
//   verify FILE.sst
//       SstFileReader::VerifyChecksum. Prints `OK` (exit 0) or the error
//       (exit 1).
//
//   ingest DBDIR FILE.sst...
//       Opens (create_if_missing) the DB at DBDIR, IngestExternalFile()s the
//       files (copied, never moved) and prints the whole DB as
//       `HEXKEY HEXVALUE` lines. Any error: message on stderr, exit 1.
//
//   props FILE.sst
//       Prints the table properties, one `name = value` line each, followed
//       by the user-collected properties as `name = 0xHEX` (raw bytes).
//
// Build: tools/rocksdb-compat/build.sh

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/sst_dump_tool.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/utilities/debug.h>

#include <rocksdb/cache.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using rocksdb::Options;
using rocksdb::Slice;
using rocksdb::Status;

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

// Prints "error: <what>" to stderr and exits with status 1.
[[noreturn]] void Die(const std::string& what) {
  std::cerr << "error: " << what << std::endl;
  std::exit(1);
}

// Exits with the RocksDB status message if `s` is not OK.
void Check(const Status& s, const std::string& context) {
  if (!s.ok()) Die(context + ": " + s.ToString());
}

// Lowercase hex encoding of arbitrary bytes.
std::string ToHex(const Slice& s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (size_t i = 0; i < s.size(); i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes hex (either case). Returns false on odd length or a bad digit.
bool FromHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  out->reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = HexDigit(hex[i]);
    int lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>((hi << 4) | lo));
  }
  return true;
}

// Prints one `HEXKEY HEXVALUE` line (just `HEXKEY` when the value is empty).
void PrintKV(const Slice& key, const Slice& value) {
  std::string line = ToHex(key);
  if (!value.empty()) {
    line.push_back(' ');
    line += ToHex(value);
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stdout);
}

uint64_t ParseU64(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) {
    Die("invalid number for " + flag + ": '" + text + "'");
  }
  return v;
}

// Options used for reading: the block-based table factory with default
// options is enough, RocksDB picks everything else up from the file itself.
Options ReaderOptions() {
  Options options;
  options.table_factory.reset(
      rocksdb::NewBlockBasedTableFactory(rocksdb::BlockBasedTableOptions()));
  return options;
}

// Removes a directory tree (used for the scratch DB of `scan
// --with-tombstones`).
void RemoveTree(const std::string& path) {
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        return std::remove(p);
      },
      16, FTW_DEPTH | FTW_PHYS);
}

void Usage() {
  std::cerr <<
      "usage:\n"
      "  strata-rocksdb-compat write OUT.sst [--compression "
      "none|snappy|lz4|zstd]\n"
      "      [--bloom BITS_PER_KEY] [--checksum crc32c|xxh3] "
      "[--block-size N]\n"
      "      [--prefix-len N] [--host-id STR]   < lines of "
      "`put K V` | `del K` | `range S E` (hex)\n"
      "  strata-rocksdb-compat scan [--with-tombstones] FILE.sst\n"
      "  strata-rocksdb-compat verify FILE.sst\n"
      "  strata-rocksdb-compat ingest DBDIR FILE.sst...\n"
      "  strata-rocksdb-compat props FILE.sst\n";
}

// ---------------------------------------------------------------------------
// write
// ---------------------------------------------------------------------------

int CmdWrite(const std::vector<std::string>& args) {
  if (args.empty()) {
    Usage();
    return 2;
  }
  const std::string out_path = args[0];

  Options options;
  rocksdb::BlockBasedTableOptions table;
  table.format_version = 5;  // what Strata targets (also the 7.8 default)
  uint64_t bloom_bits = 0;
  uint64_t prefix_len = 0;

  for (size_t i = 1; i < args.size(); i++) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) Die("missing value for " + flag);
    const std::string& val = args[++i];
    if (flag == "--compression") {
      if (val == "none") {
        options.compression = rocksdb::kNoCompression;
      } else if (val == "snappy") {
        options.compression = rocksdb::kSnappyCompression;
      } else if (val == "lz4") {
        options.compression = rocksdb::kLZ4Compression;
      } else if (val == "zstd") {
        options.compression = rocksdb::kZSTD;
      } else {
        Die("unknown compression '" + val + "'");
      }
    } else if (flag == "--bloom") {
      bloom_bits = ParseU64(flag, val);
    } else if (flag == "--checksum") {
      if (val == "crc32c") {
        table.checksum = rocksdb::kCRC32c;
      } else if (val == "xxh3") {
        table.checksum = rocksdb::kXXH3;
      } else {
        Die("unknown checksum '" + val + "'");
      }
    } else if (flag == "--block-size") {
      table.block_size = ParseU64(flag, val);
    } else if (flag == "--prefix-len") {
      prefix_len = ParseU64(flag, val);
      if (prefix_len == 0) Die("--prefix-len must be > 0");
    } else if (flag == "--host-id") {
      // Value of the rocksdb.creating.host.identity property; RocksDB
      // defaults to the machine's hostname.
      options.db_host_id = val;
    } else {
      Die("unknown option " + flag);
    }
  }

  if (prefix_len > 0) {
    // A prefix extractor makes the (full) filter contain the key prefixes in
    // addition to whole keys (whole_key_filtering stays at its default,
    // true). A prefix bloom needs a filter policy, so default to 10 bits/key.
    options.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(prefix_len));
    if (bloom_bits == 0) bloom_bits = 10;
  }
  if (bloom_bits > 0) {
    table.filter_policy.reset(
        rocksdb::NewBloomFilterPolicy(static_cast<double>(bloom_bits)));
  }
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
  Check(writer.Open(out_path), "open " + out_path);

  // From here on, never leave a partial file behind on failure.
  auto fail = [&](const std::string& what) {
    std::remove(out_path.c_str());
    Die(what);
  };
  auto check = [&](const Status& s, const std::string& context) {
    if (!s.ok()) fail(context + ": " + s.ToString());
  };

  std::string line;
  uint64_t lineno = 0;
  while (std::getline(std::cin, line)) {
    lineno++;
    std::istringstream in(line);
    std::string op, a, b, extra;
    in >> op >> a >> b >> extra;
    if (op.empty() || op[0] == '#') continue;  // blank line or comment
    const std::string where = "stdin line " + std::to_string(lineno);
    if (!extra.empty()) fail(where + ": too many fields");

    std::string key, value;
    if (!FromHex(a, &key) || !FromHex(b, &value)) fail(where + ": bad hex");
    if (op == "put") {
      if (a.empty()) fail(where + ": put needs a key");
      check(writer.Put(key, value), where + ": put");
    } else if (op == "del") {
      if (a.empty() || !b.empty()) fail(where + ": expected `del HEXKEY`");
      check(writer.Delete(key), where + ": del");
    } else if (op == "range") {
      if (a.empty() || b.empty()) fail(where + ": expected `range S E`");
      // RocksDB 7.8 accepts an empty or inverted range without complaint;
      // refuse it here so no meaningless tombstone ends up in a file.
      if (key >= value) fail(where + ": range start must be < end");
      check(writer.DeleteRange(key, value), where + ": range");
    } else {
      fail(where + ": unknown operation '" + op + "'");
    }
  }

  rocksdb::ExternalSstFileInfo info;
  check(writer.Finish(&info), "finish " + out_path);
  std::cout << out_path << " file_size=" << info.file_size
            << " num_entries=" << info.num_entries
            << " num_range_del_entries=" << info.num_range_del_entries
            << std::endl;
  return 0;
}

// ---------------------------------------------------------------------------
// scan
// ---------------------------------------------------------------------------

// Reads the range tombstones of the table at `sst_path` with RocksDB's own
// sst_dump code (SSTDumpTool, "raw" mode): the public SstFileReader API of
// 7.8 has no range-deletion iterator, but the raw dump, written to
// <path minus ".sst">_dump.txt, has a "Range deletions:" section with one
// "  HEX    START: END" line per (fragmented) tombstone. `sst_path` should be
// a scratch copy since the dump file is created next to it.
Status ReadRangeTombstones(
    const std::string& sst_path,
    std::vector<std::pair<std::string, std::string>>* out) {
  // SSTDumpTool chatters on stdout; send that to /dev/null meanwhile.
  std::fflush(stdout);
  int saved_stdout = dup(1);
  int devnull = open("/dev/null", O_WRONLY);
  if (saved_stdout < 0 || devnull < 0) return Status::IOError("dup/open");
  dup2(devnull, 1);
  close(devnull);
  const std::string file_arg = "--file=" + sst_path;
  const char* argv[] = {"sst_dump", file_arg.c_str(), "--command=raw"};
  int rc = rocksdb::SSTDumpTool().Run(3, argv, ReaderOptions());
  std::fflush(stdout);
  dup2(saved_stdout, 1);
  close(saved_stdout);
  if (rc != 0) return Status::Corruption("sst_dump --command=raw failed");

  const std::string dump_path =
      sst_path.substr(0, sst_path.size() - 4) + "_dump.txt";
  std::ifstream dump(dump_path);
  if (!dump) return Status::IOError("no raw dump at " + dump_path);
  std::string line;
  bool in_section = false;
  while (std::getline(dump, line)) {
    if (line == "Range deletions:") {
      in_section = true;
    } else if (in_section && line.empty()) {
      break;  // the section ends with a blank line
    } else if (in_section && line.rfind("  HEX", 0) == 0) {
      // "  HEX    <START>: <END>"
      std::istringstream fields(line.substr(5));
      std::string start_hex, end_hex, start, end;
      fields >> start_hex >> end_hex;
      if (start_hex.empty() || start_hex.back() != ':' ||
          !FromHex(start_hex.substr(0, start_hex.size() - 1), &start) ||
          !FromHex(end_hex, &end)) {
        return Status::Corruption("unparsable range deletion line: " + line);
      }
      out->emplace_back(start, end);
    }
  }
  return Status::OK();
}

// Lists everything in the table in `write` input syntax: every point entry,
// deletions included, in key order, then every range tombstone. Points come
// from ingesting a copy of the file into a scratch DB (an empty DB takes the
// file at sequence number 0) and walking its internal keys with
// GetAllKeyVersions; range tombstones come from ReadRangeTombstones().
int ScanWithTombstones(const std::string& path) {
  char tmpl[] = "/tmp/strata-rocksdb-compat-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) Die("mkdtemp failed");
  const std::string dir = tmpl;
  const std::string copy = dir + "/table.sst";
  {
    std::ifstream src(path, std::ios::binary);
    std::ofstream dst(copy, std::ios::binary);
    dst << src.rdbuf();
    if (!src || !dst) {
      RemoveTree(dir);
      Die("cannot copy " + path + " to " + copy);
    }
  }

  Status s;
  std::vector<rocksdb::KeyVersion> versions;
  std::vector<std::pair<std::string, std::string>> ranges;
  {
    Options options = ReaderOptions();
    options.create_if_missing = true;
    rocksdb::DB* raw_db = nullptr;
    s = rocksdb::DB::Open(options, dir + "/db", &raw_db);
    std::unique_ptr<rocksdb::DB> db(raw_db);
    if (s.ok()) {
      rocksdb::IngestExternalFileOptions ingest;
      ingest.move_files = false;
      ingest.verify_checksums_before_ingest = true;
      s = db->IngestExternalFile({copy}, ingest);
    }
    if (s.ok()) {
      s = rocksdb::GetAllKeyVersions(db.get(), Slice(), Slice(),
                                     std::numeric_limits<size_t>::max(),
                                     &versions);
    }
    if (db) db->Close();
  }
  if (s.ok()) s = ReadRangeTombstones(copy, &ranges);
  RemoveTree(dir);
  if (!s.ok()) Die(path + ": " + s.ToString());

  for (const auto& kv : versions) {
    if (kv.type == 0x1 /* kTypeValue */) {
      std::string line = "put " + ToHex(kv.user_key);
      if (!kv.value.empty()) line += " " + ToHex(kv.value);
      std::cout << line << "\n";
    } else if (kv.type == 0x0 /* kTypeDeletion */) {
      std::cout << "del " << ToHex(kv.user_key) << "\n";
    } else {
      // Not produced by SstFileWriter's Put/Delete; shown for debugging.
      std::cout << "# type=" << kv.type << " " << ToHex(kv.user_key) << " "
                << ToHex(kv.value) << "\n";
    }
  }
  for (const auto& r : ranges) {
    std::cout << "range " << ToHex(r.first) << " " << ToHex(r.second) << "\n";
  }
  return 0;
}

int CmdScan(const std::vector<std::string>& args) {
  bool with_tombstones = false;
  std::string path;
  for (const auto& a : args) {
    if (a == "--with-tombstones") {
      with_tombstones = true;
    } else if (path.empty()) {
      path = a;
    } else {
      Usage();
      return 2;
    }
  }
  if (path.empty()) {
    Usage();
    return 2;
  }

  rocksdb::SstFileReader reader(ReaderOptions());
  Check(reader.Open(path), "open " + path);
  auto props = reader.GetTableProperties();

  if (with_tombstones) return ScanWithTombstones(path);

  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(ro));
  uint64_t count = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    PrintKV(it->key(), it->value());
    count++;
  }
  std::fflush(stdout);
  Check(it->status(), "scan " + path);

  std::cerr << "# " << count << " visible entries";
  if (props) {
    std::cerr << " (num_entries=" << props->num_entries
              << " num_deletions=" << props->num_deletions
              << " num_range_deletions=" << props->num_range_deletions << ")";
  }
  std::cerr << std::endl;
  return 0;
}

// ---------------------------------------------------------------------------
// verify
// ---------------------------------------------------------------------------

int CmdVerify(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    Usage();
    return 2;
  }
  rocksdb::SstFileReader reader(ReaderOptions());
  Status s = reader.Open(args[0]);
  if (s.ok()) s = reader.VerifyChecksum();
  if (!s.ok()) {
    std::cout << s.ToString() << std::endl;
    return 1;
  }
  std::cout << "OK" << std::endl;
  return 0;
}

// ---------------------------------------------------------------------------
// ingest
// ---------------------------------------------------------------------------

int CmdIngest(const std::vector<std::string>& args) {
  if (args.size() < 2) {
    Usage();
    return 2;
  }
  const std::string dbdir = args[0];
  const std::vector<std::string> files(args.begin() + 1, args.end());

  Options options = ReaderOptions();
  options.create_if_missing = true;
  rocksdb::DB* raw_db = nullptr;
  Check(rocksdb::DB::Open(options, dbdir, &raw_db), "open db " + dbdir);
  std::unique_ptr<rocksdb::DB> db(raw_db);

  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = false;  // copy: leave the caller's files alone
  ingest.verify_checksums_before_ingest = true;
  Check(db->IngestExternalFile(files, ingest), "ingest");

  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    PrintKV(it->key(), it->value());
  }
  std::fflush(stdout);
  Check(it->status(), "iterate db");
  it.reset();
  Check(db->Close(), "close db");
  return 0;
}

// ---------------------------------------------------------------------------
// props
// ---------------------------------------------------------------------------

int CmdProps(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    Usage();
    return 2;
  }
  rocksdb::SstFileReader reader(ReaderOptions());
  Check(reader.Open(args[0]), "open " + args[0]);
  auto props = reader.GetTableProperties();
  if (!props) Die("no table properties");

  // ToString() renders the well-known properties in readable form.
  std::cout << props->ToString("\n", " = ") << "\n";
  // Everything else in the properties block that RocksDB does not map onto
  // a TableProperties field (e.g. rocksdb.external_sst_file.*), raw bytes.
  for (const auto& kv : props->user_collected_properties) {
    std::cout << kv.first << " = 0x" << ToHex(kv.second) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage();
    return 2;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "write") return CmdWrite(args);
  if (cmd == "scan") return CmdScan(args);
  if (cmd == "verify") return CmdVerify(args);
  if (cmd == "ingest") return CmdIngest(args);
  if (cmd == "props") return CmdProps(args);
  Usage();
  return 2;
}
