//! Strata's error type.
//!
//! Every failure that a caller can act on is an [`Error`]. Corruption always
//! names the file and byte offset where it was found, so an operator can tell
//! which file to look at; it is never a panic and never a wrong answer.
//!
//! Each variant says its message once: [`Error::Io`] prints the operating
//! system's error in its own `Display` and therefore does not also return it
//! from [`std::error::Error::source`] (a reporter walking the chain, such as
//! `anyhow`'s `{:#}`, would print it twice). [`Error::io_error`] gives
//! access to it.
//!
//! Invariant: the operating system's error is kept as it came, so its
//! [`io::ErrorKind`] and raw OS error (`raw_os_error()`: ENOSPC and EIO are
//! told apart by it, not by the kind alone) survive [`Error::context`] and
//! `clone`. A note added to an I/O error is kept beside it
//! ([`Error::Io::note`](Error::Io)), not folded into a new `io::Error`
//! (which would have only the kind and a string). Converted into an
//! `io::Error` (`?` in a function returning `io::Result`), an [`Error`]
//! travels whole as that error's payload, so the kind, the message and the
//! raw OS error all survive that too ([`Error::raw_os_error_of`]).

use std::fmt;
use std::io;

/// The result type of every fallible Strata call.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong.
///
/// New variants may be added in minor releases, so a `match` needs a
/// wildcard arm. The predicates ([`Error::is_corruption`],
/// [`Error::is_busy`], ...) are the stable way to classify an error.
///
/// ```
/// use strata::{Db, Error, Options};
///
/// let dir = tempfile::tempdir()?;
/// let missing = dir.path().join("no-such-db");
/// let opts = Options { create_if_missing: false, ..Options::default() };
/// match Db::open(&missing, opts) {
///     Err(Error::NotFound { path }) => assert!(path.ends_with("no-such-db")),
///     other => panic!("expected NotFound, got {:?}", other.map(|_| ())),
/// }
/// // Nothing was created.
/// assert!(!missing.exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with the path it happened on.
    Io {
        /// The file or directory the operation was on.
        path: String,
        /// What the operating system said, as it said it (its kind and raw
        /// OS error intact).
        source: io::Error,
        /// What the failed operation had or had not done, or what the
        /// database did about it (it stopped accepting writes, say), printed
        /// after the operating system's error; `None` when nothing was
        /// added.
        note: Option<String>,
    },
    /// Bytes on disk are not what the format says they must be.
    Corruption {
        /// The file holding the bad bytes.
        file: String,
        /// Byte offset in `file` where the problem was found.
        offset: u64,
        /// What is wrong there.
        msg: String,
    },
    /// The caller asked for something that cannot be done (a bad option,
    /// keys out of order, a snapshot of another database, ...).
    InvalidArgument(String),
    /// The file uses a feature Strata does not implement (an unknown
    /// compression type, a newer format version, a merge operand, ...).
    NotSupported(String),
    /// The database is in use: opened by another `Db` in this process or
    /// locked by another process. Retrying after the other user closes it
    /// succeeds.
    Busy {
        /// The database directory.
        path: String,
        /// Who holds it.
        msg: String,
    },
    /// There is no database at this path (nothing exists there) and the
    /// options do not allow creating one.
    NotFound {
        /// The path that was opened.
        path: String,
    },
    /// Something exists at this path but it is not a Strata database (a
    /// plain file, or a directory without a `CURRENT` file).
    NotADatabase {
        /// The path that was opened.
        path: String,
        /// What was found there instead.
        reason: String,
    },
    /// A bug in Strata: an internal invariant did not hold. Please report
    /// it; the operation was abandoned before it could give a wrong answer.
    Internal(String),
}

impl Error {
    /// A [`Error::Corruption`] in `file` at byte `offset`.
    pub fn corruption(file: impl Into<String>, offset: u64, msg: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            msg: msg.into(),
        }
    }

    /// An [`Error::Io`] on `path`.
    pub fn io(path: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
            note: None,
        }
    }

    /// An [`Error::InvalidArgument`].
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    /// An [`Error::Internal`]: a broken invariant, not the caller's fault.
    pub fn internal(msg: impl Into<String>) -> Error {
        Error::Internal(msg.into())
    }

    /// The same error with `note` after its message (what the failed
    /// operation had or had not done), its kind unchanged; an I/O error
    /// keeps the operating system's error itself (kind and raw OS error).
    pub(crate) fn context(self, note: impl std::fmt::Display) -> Error {
        match self {
            Error::Io {
                path,
                source,
                note: earlier,
            } => Error::Io {
                path,
                source,
                note: Some(match earlier {
                    Some(e) => format!("{e}; {note}"),
                    None => note.to_string(),
                }),
            },
            Error::Corruption { file, offset, msg } => Error::Corruption {
                file,
                offset,
                msg: format!("{msg}; {note}"),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("{m}; {note}")),
            Error::NotSupported(m) => Error::NotSupported(format!("{m}; {note}")),
            Error::Busy { path, msg } => Error::Busy {
                path,
                msg: format!("{msg}; {note}"),
            },
            Error::NotADatabase { path, reason } => Error::NotADatabase {
                path,
                reason: format!("{reason}; {note}"),
            },
            Error::Internal(m) => Error::Internal(format!("{m}; {note}")),
            e @ Error::NotFound { .. } => e,
        }
    }

    /// Whether stored data was found damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// Whether the database is open elsewhere ([`Error::Busy`]).
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Busy { .. })
    }

    /// Whether the path holds no database ([`Error::NotFound`] or
    /// [`Error::NotADatabase`]).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. } | Error::NotADatabase { .. })
    }

    /// Whether the operating system refused an operation ([`Error::Io`]: a
    /// full disk, a permission, a missing file); [`Self::io_error`] gives
    /// its error.
    pub fn is_io(&self) -> bool {
        matches!(self, Error::Io { .. })
    }

    /// Whether the caller asked for something that cannot be done
    /// ([`Error::InvalidArgument`]: a bad option, a key too long, keys out
    /// of order); retrying the same call fails the same way.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// let e = db.delete_range("z", "a").unwrap_err();
    /// assert!(e.is_invalid_argument());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Error::InvalidArgument(_))
    }

    /// Whether a file uses a feature Strata does not implement
    /// ([`Error::NotSupported`]: a compression, a format version, a merge
    /// operand).
    pub fn is_not_supported(&self) -> bool {
        matches!(self, Error::NotSupported(_))
    }

    /// The operating system's error behind an [`Error::Io`], as it was
    /// returned (a note added to the error does not change it, so
    /// `raw_os_error()` tells ENOSPC from EIO).
    ///
    /// ```
    /// # use std::io;
    /// let e = strata::Error::io("/db/000007.sst", io::Error::from_raw_os_error(28));
    /// assert_eq!(e.io_error().and_then(|s| s.raw_os_error()), Some(28));
    /// ```
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The raw OS error (errno) behind `e`, whether the operating system
    /// returned `e` itself or `e` is an [`Error`] converted into an
    /// `io::Error` (`?` in a function returning `io::Result`; see the
    /// `From<Error> for io::Error` impl for why `e.raw_os_error()` alone is
    /// `None` then). `None` when neither holds one.
    ///
    /// ```
    /// use std::io;
    /// use strata::Error;
    ///
    /// // What a Strata call failing on a full disk gives an `io::Result` caller.
    /// let e: io::Error = Error::io("/db/000007.log", io::Error::from_raw_os_error(28)).into();
    /// assert_eq!(Error::raw_os_error_of(&e), Some(28));
    /// // Plain OS errors work too, so one call serves every `io::Error`.
    /// assert_eq!(Error::raw_os_error_of(&io::Error::from_raw_os_error(5)), Some(5));
    /// ```
    pub fn raw_os_error_of(e: &io::Error) -> Option<i32> {
        if let Some(code) = e.raw_os_error() {
            return Some(code);
        }
        // A Strata error converted into an `io::Error` is its payload; its
        // own OS error may in turn be one (a `Vfs` written in `io::Result`
        // that calls Strata), hence the recursion.
        let inner = e.get_ref()?.downcast_ref::<Error>()?;
        Error::raw_os_error_of(inner.io_error()?)
    }
}

impl Clone for Error {
    fn clone(&self) -> Error {
        match self {
            Error::Io { path, source, note } => Error::Io {
                path: path.clone(),
                source: clone_io(source),
                note: note.clone(),
            },
            Error::Corruption { file, offset, msg } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                msg: msg.clone(),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::NotSupported(m) => Error::NotSupported(m.clone()),
            Error::Busy { path, msg } => Error::Busy {
                path: path.clone(),
                msg: msg.clone(),
            },
            Error::NotFound { path } => Error::NotFound { path: path.clone() },
            Error::NotADatabase { path, reason } => Error::NotADatabase {
                path: path.clone(),
                reason: reason.clone(),
            },
            Error::Internal(m) => Error::Internal(m.clone()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source, note } => {
                write!(f, "I/O error on {path}: {source}")?;
                match note {
                    Some(n) => write!(f, "; {n}"),
                    None => Ok(()),
                }
            }
            Error::Corruption { file, offset, msg } => {
                write!(f, "corruption in {file} at offset {offset}: {msg}")
            }
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::NotSupported(m) => write!(f, "not supported: {m}"),
            Error::Busy { path, msg } => write!(f, "database {path} is busy: {msg}"),
            Error::NotFound { path } => write!(f, "no database at {path}: nothing exists there"),
            Error::NotADatabase { path, reason } => {
                write!(f, "{path} is not a Strata database: {reason}")
            }
            Error::Internal(m) => write!(f, "internal error (a bug in Strata): {m}"),
        }
    }
}

/// A copy of an operating system's error: the same raw OS error where it
/// has one (its kind and message follow from the number), else the same
/// kind and message (`io::Error` is not `Clone`; a custom payload is kept as
/// its text).
fn clone_io(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

/// No variant has a `source`: each prints its cause itself (see the module
/// documentation).
impl std::error::Error for Error {}

/// For code that works in `io::Result`: `?` on a Strata call turns its
/// [`Error`] into an `io::Error` whose kind follows the variant (an I/O
/// error keeps the operating system's kind: `StorageFull` for ENOSPC),
/// whose message is the Strata error's whole message (path, the operating
/// system's error, and any note, such as "the database stopped accepting
/// writes"), and whose payload is the [`Error`] itself.
///
/// The raw OS error is *not* the result's `raw_os_error()`, which is
/// `None`: std's `io::Error` holds either an OS error code (then
/// `raw_os_error()` gives it, and its message is only the operating
/// system's text) or a kind with a payload, never both. A code alone
/// (`io::Error::from_raw_os_error`) would print "No space left on device
/// (os error 28)" and lose which file and what the database did about it,
/// so the payload is kept, and the code is read from it:
/// [`Error::raw_os_error_of`] does so for any `io::Error` (a plain OS error
/// or a converted Strata error), and `get_ref()` / `into_inner()` /
/// `downcast::<strata::Error>()` give the Strata error back whole.
///
/// ```
/// use std::io;
///
/// fn load(db: &strata::Db) -> io::Result<()> {
///     db.put("k", "v")?; // strata::Error -> io::Error
///     Ok(())
/// }
/// # let dir = tempfile::tempdir()?;
/// # let db = strata::Db::open_default(dir.path())?;
/// # load(&db)?;
///
/// // What `load` returns when the put hits a full disk:
/// let e: io::Error =
///     strata::Error::io("/db/000007.log", io::Error::from_raw_os_error(28)).into();
/// assert_eq!(e.kind(), io::ErrorKind::StorageFull);
/// assert!(e.to_string().starts_with("I/O error on /db/000007.log: "));
/// assert_eq!(e.raw_os_error(), None); // a payload, not a bare code
/// assert_eq!(strata::Error::raw_os_error_of(&e), Some(28));
/// // The Strata error, whole:
/// let inner = e.downcast::<strata::Error>().expect("a Strata error");
/// assert_eq!(inner.io_error().and_then(|s| s.raw_os_error()), Some(28));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match &e {
            Error::Io { source, .. } => source.kind(),
            Error::Corruption { .. } => io::ErrorKind::InvalidData,
            Error::InvalidArgument(_) => io::ErrorKind::InvalidInput,
            Error::NotSupported(_) => io::ErrorKind::Unsupported,
            Error::Busy { .. } => io::ErrorKind::WouldBlock,
            Error::NotFound { .. } => io::ErrorKind::NotFound,
            Error::NotADatabase { .. } => io::ErrorKind::InvalidInput,
            Error::Internal(_) => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// The OS error appears once in a printed chain.
    #[test]
    fn io_error_is_said_once() {
        let e = Error::io("/x", io::Error::new(io::ErrorKind::NotFound, "gone away"));
        let mut chain = e.to_string();
        let mut src = e.source();
        while let Some(s) = src {
            chain.push_str(&format!(": {s}"));
            src = s.source();
        }
        assert_eq!(chain.matches("gone away").count(), 1, "{chain}");
        assert_eq!(
            e.io_error().map(|s| s.kind()),
            Some(io::ErrorKind::NotFound)
        );
    }

    /// Converted into an `io::Error` (`?` in `io::Result` code), a Strata
    /// I/O error keeps its kind, its whole message (path and note) and,
    /// through `raw_os_error_of`, its raw OS error; so does a stopped
    /// database's error, and a converted error nested inside another's
    /// source. Non-I/O variants and message-only errors have no code.
    #[test]
    fn an_io_result_caller_still_gets_the_raw_os_error() {
        fn in_io_result(e: Error) -> io::Result<()> {
            Err(e)?;
            Ok(())
        }
        let stopped = Error::io("/db/000012.log", io::Error::from_raw_os_error(28))
            .context("the database stopped accepting writes");
        let msg = stopped.to_string();
        let e = in_io_result(stopped).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.to_string(), msg, "the whole message, path and note");
        assert_eq!(Error::raw_os_error_of(&e), Some(28));
        let back = e
            .downcast::<Error>()
            .expect("the payload is the Strata error");
        assert_eq!(back.to_string(), msg);

        // A converted error inside another Strata error's OS error (a
        // `Vfs` written in `io::Result` that calls Strata).
        let inner: io::Error = Error::io("/x", io::Error::from_raw_os_error(5)).into();
        let outer: io::Error = Error::io("/y", inner).into();
        assert_eq!(Error::raw_os_error_of(&outer), Some(5));

        assert_eq!(
            Error::raw_os_error_of(&io::Error::from_raw_os_error(28)),
            Some(28)
        );
        let plain = io::Error::new(io::ErrorKind::NotFound, "gone");
        assert_eq!(Error::raw_os_error_of(&plain), None);
        let not_io: io::Error = Error::invalid("bad").into();
        assert_eq!(not_io.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(Error::raw_os_error_of(&not_io), None);
        let message_only: io::Error = Error::io("/z", plain).into();
        assert_eq!(Error::raw_os_error_of(&message_only), None);
    }

    /// A note added to an I/O error (`context`, twice) is printed after
    /// the operating system's error, which keeps its kind and raw OS error
    /// (ENOSPC stays ENOSPC, not only "storage full"), in a clone too.
    #[test]
    fn context_keeps_the_raw_os_error() {
        let enospc = io::Error::from_raw_os_error(28);
        let (kind, os_text) = (enospc.kind(), enospc.to_string());
        let e = Error::io("/db/000012.sst", enospc)
            .context("nothing was changed")
            .context("the database stopped");
        for e in [e.clone(), e] {
            let io = e.io_error().expect("still an I/O error");
            assert_eq!(io.raw_os_error(), Some(28), "{e}");
            assert_eq!(io.kind(), kind, "{e}");
            assert_eq!(
                e.to_string(),
                format!(
                    "I/O error on /db/000012.sst: {os_text}; nothing was changed; the database \
                     stopped"
                )
            );
        }
        // A message-only error keeps its kind and text through a clone.
        let e = Error::io("/x", io::Error::new(io::ErrorKind::NotFound, "gone")).context("n");
        let c = e.clone();
        assert_eq!(
            c.io_error().map(|s| s.kind()),
            Some(io::ErrorKind::NotFound)
        );
        assert_eq!(c.to_string(), "I/O error on /x: gone; n");
    }
}
