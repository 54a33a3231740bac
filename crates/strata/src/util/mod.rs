//! Small building blocks shared by every on-disk format: integer coding,
//! checksums and hashes.

pub mod checksum;
pub mod coding;
#[cfg(any(test, feature = "internals"))]
#[doc(hidden)]
pub mod datadriven;
pub mod hex;
pub mod xxph3;
