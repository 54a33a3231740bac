//! TEMPORARY stub; replaced by the real FastLocalBloom implementation.
pub const BUILTIN_BLOOM_META_NAME: &str = "fullfilter.rocksdb.BuiltinBloomFilter";
pub struct BloomFilterBuilder {
    n: usize,
}
impl BloomFilterBuilder {
    pub fn new(_bits_per_key: f64) -> Self {
        BloomFilterBuilder { n: 0 }
    }
    pub fn add_key(&mut self, _key: &[u8]) {
        self.n += 1
    }
    pub fn num_added(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn finish(&mut self) -> Vec<u8> {
        vec![0; 69]
    }
}
pub enum FilterReader {
    AlwaysTrue,
}
impl FilterReader {
    pub fn new(_c: &[u8]) -> FilterReader {
        FilterReader::AlwaysTrue
    }
    pub fn may_contain(&self, _key: &[u8]) -> bool {
        true
    }
    pub fn num_probes(&self) -> Option<u32> {
        None
    }
}
