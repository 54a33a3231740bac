//! Standard output whose write errors say so: "<stdout>: No space left on
//! device" rather than a bare OS error, with the error's kind kept, so a
//! reader that went away (`BrokenPipe`) still ends a command quietly
//! (`main`'s `is_broken_pipe`). For streamed output (`kv dump`, `sst
//! dump`); single lines go through the `outln!` macro.

use std::io::{self, StdoutLock, Write};

/// Standard output, locked, naming itself in its errors.
pub struct Stdout(StdoutLock<'static>);

/// Locks standard output for a command's streamed output.
pub fn lock() -> Stdout {
    Stdout(io::stdout().lock())
}

fn named(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("<stdout>: {e}"))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(named)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(named)
    }
}
