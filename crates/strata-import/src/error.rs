//! The import's error type. Every error says what and where: a bad row names
//! its file, line (1-based, counting physical lines, so a quoted newline
//! advances it) and column; a duplicate key names both rows.

use std::fmt;
use std::path::PathBuf;

/// The import's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Where a row came from: input file and the line its record starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSource {
    /// The input file's name (`<stdin>` for standard input).
    pub file: String,
    /// The line the record starts on (1-based).
    pub line: u64,
}

impl fmt::Display for RowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug)]
/// Why an import or a table read failed.
pub enum Error {
    /// The DDL or a table definition is unusable.
    Schema(String),
    /// A row of the input is malformed.
    BadRow {
        /// The row.
        at: RowSource,
        /// The column the problem is in, when it is in one.
        column: Option<String>,
        /// What is wrong.
        reason: String,
    },
    /// Two rows (or a row and the table) share a primary or unique key.
    Duplicate {
        /// The index holding the key twice.
        index: String,
        /// The key's column values.
        key: String,
        /// `None`: the row already in the table.
        first: Option<RowSource>,
        /// The later row.
        second: RowSource,
    },
    /// Anything else the user asked for that cannot be done.
    Invalid(String),
    /// An I/O error on a file.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        err: std::io::Error,
    },
    /// The database failed.
    Db(strata::Error),
    /// The catalog stored in the database does not decode.
    Catalog(String),
}

impl Error {
    /// A schema error.
    pub fn schema(msg: impl Into<String>) -> Error {
        Error::Schema(msg.into())
    }
    /// A request that cannot be done.
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::Invalid(msg.into())
    }
    /// An I/O error on `path`.
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
                    "duplicate key {key} in index {index}: the row at {second} has the key of a \
                     row already in the table"
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
