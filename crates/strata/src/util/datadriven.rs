//! Data-driven test files (Pebble's `datadriven` style), for the tests of
//! every algorithm that has one: a script of commands, each followed by
//! its expected output, checked against what the code under test prints.
//!
//! A case is a command line, optional input lines, a `----` line, and the
//! expected output up to the next blank line. Blank lines and `#` lines
//! between cases are kept as they are. With `STRATA_REWRITE` set in the
//! environment, [`check_dir`] writes the actual output back into the files
//! instead of failing (read the diff before committing it).
//!
//! Test support only (public so integration tests can use it; not part of
//! the engine's API).

use std::path::Path;

/// Runs every case of the script at `path` through `run(command line,
/// input lines)` and returns the mismatches (file:line, command, expected
/// and actual) and the script with the actual outputs.
pub fn run_file(
    path: &Path,
    run: &mut dyn FnMut(&str, &[&str]) -> String,
) -> std::io::Result<(Vec<String>, String)> {
    let text = std::fs::read_to_string(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    let mut rewritten = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            rewritten.push_str(line);
            rewritten.push('\n');
            i += 1;
            continue;
        }
        let cmd_line = i + 1;
        i += 1;
        let mut input = Vec::new();
        while i < lines.len() && lines[i].trim_end() != "----" {
            input.push(lines[i].trim());
            i += 1;
        }
        i += 1; // the separator
        let mut expected = String::new();
        while i < lines.len() && !lines[i].trim_end().is_empty() {
            expected.push_str(lines[i].trim_end());
            expected.push('\n');
            i += 1;
        }
        let actual = run(line, &input);
        rewritten.push_str(line);
        rewritten.push('\n');
        for l in &input {
            rewritten.push_str(l);
            rewritten.push('\n');
        }
        rewritten.push_str("----\n");
        rewritten.push_str(&actual);
        if actual != expected {
            failures.push(format!(
                "{name}:{cmd_line}: {line}\n--- expected\n{expected}--- actual\n{actual}"
            ));
        }
    }
    Ok((failures, rewritten))
}

/// Runs every `*.txt` script in `dir` (in name order), each with a fresh
/// runner from `new_runner`, and returns the mismatches; with
/// `STRATA_REWRITE` set, rewrites the files and returns none. Fails
/// (returns an error) on an unreadable directory, no scripts, or a file it
/// cannot read or write.
pub fn check_dir<R: FnMut(&str, &[&str]) -> String>(
    dir: &Path,
    mut new_runner: impl FnMut() -> R,
) -> std::io::Result<Vec<String>> {
    let mut paths = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|e| e == "txt") {
            paths.push(p);
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no test data in {}", dir.display()),
        ));
    }
    let rewrite = std::env::var_os("STRATA_REWRITE").is_some();
    let mut failures = Vec::new();
    for p in &paths {
        let mut runner = new_runner();
        let (f, text) = run_file(p, &mut runner)?;
        if rewrite {
            std::fs::write(p, text)?;
        } else {
            failures.extend(f);
        }
    }
    Ok(failures)
}
