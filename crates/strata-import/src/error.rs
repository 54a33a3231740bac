//! The import's error type. Every error says what and where: a bad row names
//! its file, line (1-based, counting physical lines, so a quoted newline
//! advances it) and column; a duplicate key names both rows.

use std::fmt;
use std::path::PathBuf;

pub type Result<T> = std::result::Result<T, Error>;

/// Where a row came from: input file and the line its record starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSource {
    pub file: String,
    pub line: u64,
}

impl fmt::Display for RowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug)]
pub enum Error {
    /// The DDL or a table definition is unusable.
    Schema(String),
    /// A row of the input is malformed.
    BadRow {
        at: RowSource,
        /// The column the problem is in, when it is in one.
        column: Option<String>,
        reason: String,
    },
    /// Two rows (or a row and the table) share a primary or unique key.
    Duplicate {
        index: String,
        key: String,
        /// `None`: the row already in the table.
        first: Option<RowSource>,
        second: RowSource,
    },
    /// Anything else the user asked for that cannot be done.
    Invalid(String),
    Io {
        path: PathBuf,
        err: std::io::Error,
    },
    Db(strata::Error),
    /// The catalog stored in the database does not decode.
    Catalog(String),
}

impl Error {
    pub fn schema(msg: impl Into<String>) -> Error {
        Error::Schema(msg.into())
    }
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::Invalid(msg.into())
    }
    pub fn io(path: impl Into<PathBuf>, err: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            err,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Schema(m) => write!(f, "schema: {m}"),
            Error::BadRow { at, column, reason } => match column {
                Some(c) => write!(f, "{at}: column {c}: {reason}"),
                None => write!(f, "{at}: {reason}"),
            },
            Error::Duplicate {
                index,
                key,
                first,
                second,
            } => match first {
                Some(first) => write!(
                    f,
                    "duplicate key {key} in index {index}: rows at {first} and {second}"
                ),
                None => write!(
                    f,
                    "duplicate key {key} in index {index}: the row at {second} is already in the table"
                ),
            },
            Error::Invalid(m) => f.write_str(m),
            Error::Io { path, err } => write!(f, "{}: {err}", path.display()),
            Error::Db(e) => write!(f, "{e}"),
            Error::Catalog(m) => write!(f, "catalog: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<strata::Error> for Error {
    fn from(e: strata::Error) -> Error {
        Error::Db(e)
    }
}
