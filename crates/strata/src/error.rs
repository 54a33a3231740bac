//! Strata's error type.
//!
//! Every failure that a caller can act on is an [`Error`]. Corruption always
//! names the file and byte offset where it was found, so an operator can tell
//! which file to look at; it is never a panic and never a wrong answer.

use std::fmt;
use std::io;

/// The result type used across the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong.
#[derive(Debug)]
pub enum Error {
    /// An operating-system I/O error, with the path it happened on.
    Io { path: String, source: io::Error },
    /// Bytes on disk are not what the format says they must be.
    Corruption {
        file: String,
        offset: u64,
        msg: String,
    },
    /// The caller asked for something that cannot be done (bad option, keys out
    /// of order, ...).
    InvalidArgument(String),
    /// The file uses a feature Strata does not implement (an unknown
    /// compression type, a newer format version, ...).
    NotSupported(String),
}

impl Error {
    pub fn corruption(file: impl Into<String>, offset: u64, msg: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            msg: msg.into(),
        }
    }

    pub fn io(path: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

impl Clone for Error {
    fn clone(&self) -> Error {
        match self {
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption { file, offset, msg } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                msg: msg.clone(),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::NotSupported(m) => Error::NotSupported(m.clone()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "I/O error on {path}: {source}"),
            Error::Corruption { file, offset, msg } => {
                write!(f, "corruption in {file} at offset {offset}: {msg}")
            }
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::NotSupported(m) => write!(f, "not supported: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
