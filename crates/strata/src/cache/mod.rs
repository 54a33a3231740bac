//! Caches shared by every table reader.
