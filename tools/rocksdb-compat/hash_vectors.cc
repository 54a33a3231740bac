// Prints reference vectors for rocksdb::Hash64 (the XXPH3 preview hash that
// RocksDB persists in format_version=5 Bloom filters), straight from the
// installed RocksDB 7.8 shared library.
//
// Rebuild the committed fixture (from the repository root; needs the Debian
// package librocksdb-dev):
//
//   g++ -std=c++17 -O2 -o /tmp/hash_vectors tools/rocksdb-compat/hash_vectors.cc -lrocksdb
//   /tmp/hash_vectors > crates/strata/tests/fixtures/rocksdb/hash64_vectors.txt
//
// Input bytes: for a vector of length L the input is L bytes drawn from a
// 64-bit LCG seeded with L:
//   s = L;  repeat L times: s = s * 6364136223846793005 + 1442695040888963407
//           (mod 2^64), emit the byte s >> 56
// (crates/strata/tests/bloom_compat.rs reproduces this.)
//
// Output, one vector per line, numbers in lower-case hex without 0x except
// the length, which is decimal:
//   <len> <hash>           rocksdb::Hash64(data, len)            (seed 0)
//   <len> <hash> <seed>    rocksdb::Hash64(data, len, seed)
// Lines starting with '#' are comments.

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

// Exported by librocksdb.so but declared only in RocksDB's internal
// util/hash.h, which the -dev package does not ship.
namespace rocksdb {
uint64_t Hash64(const char* data, size_t n);
uint64_t Hash64(const char* data, size_t n, uint64_t seed);
}  // namespace rocksdb

static std::vector<char> LcgBytes(size_t len) {
  std::vector<char> out(len);
  uint64_t s = len;
  for (size_t i = 0; i < len; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    out[i] = static_cast<char>(s >> 56);
  }
  return out;
}

int main() {
  std::printf("# rocksdb::Hash64 reference vectors; see tools/rocksdb-compat/hash_vectors.cc\n");
  for (size_t len = 0; len <= 1100; ++len) {
    std::vector<char> d = LcgBytes(len);
    std::printf("%zu %016" PRIx64 "\n", len, rocksdb::Hash64(d.data(), len));
  }
  // Seeded variant: one length from each code path (0, 1-3, 4-8, 9-16,
  // 17-128, 129-240, >240 with partial/whole stripes and several blocks).
  const size_t lens[] = {0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 33, 64, 65, 97, 128,
                         129, 150, 240, 241, 256, 1024, 1025, 2048, 5000};
  const uint64_t seeds[] = {1, 0xbc9f1d34ULL, 0xdeadbeefcafebabeULL,
                            0xffffffffffffffffULL};
  for (size_t len : lens) {
    std::vector<char> d = LcgBytes(len);
    for (uint64_t seed : seeds) {
      std::printf("%zu %016" PRIx64 " %" PRIx64 "\n", len,
                  rocksdb::Hash64(d.data(), len, seed), seed);
    }
  }
  return 0;
}
