//! Versions: which table files make up the database, by level, and the
//! MANIFEST log that makes that durable; plus the sublevel view of L0 that
//! compaction picking works on.

pub mod edit;
pub mod manifest_log;
pub mod set;
pub mod sublevels;
#[allow(clippy::module_inception)]
pub mod version;

pub use edit::{FileMeta, VersionEdit};
pub use manifest_log::ManifestLog;
pub use set::VersionSet;
pub use sublevels::{L0Pick, L0Sublevels};
pub use version::{Version, NUM_LEVELS};
