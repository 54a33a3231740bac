//! Small building blocks shared by every on-disk format: integer coding,
//! checksums and hashes.

pub mod checksum;
pub mod coding;
pub mod hex;
pub mod xxph3;
