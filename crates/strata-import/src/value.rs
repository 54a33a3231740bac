//! Typed column values: parsing from CSV text and formatting back.
//!
//! Owns [`Value`] and the text forms of every [`ColumnType`]: integers in
//! decimal, floats as Rust prints them (shortest round-trip form; `NaN`,
//! `inf`, `-inf`), DECIMAL as a scaled 128-bit integer printed with exactly
//! `scale` fractional digits, BOOL as `true`/`false` (input also `t`, `f`,
//! `1`, `0`, `yes`, `no`, any case), DATE `YYYY-MM-DD`, TIMESTAMP
//! `YYYY-MM-DD HH:MM:SS[.ffffff]` (a `T` also accepted; no time zone), BYTEA
//! as PostgreSQL's hex form `\x...`. Invariant: `parse(format(v)) == v` for
//! every value `parse` accepts, so exported rows import again unchanged.
//! Every NaN is stored as one NaN; -0.0 stays -0.0 in a row (printed `-0`,
//! as PostgreSQL keeps and prints it), and only a key's encoding makes it
//! 0.0 (`encode::key`), so that -0 and 0, equal in SQL, are one key.

use crate::schema::ColumnType;

#[derive(Clone, Debug, PartialEq)]
/// A value of a column.
pub enum Value {
    /// SQL NULL.
    Null,
    /// Any integer type.
    Int(i64),
    /// A float (canonical: one NaN; -0 kept).
    Float(f64),
    /// Scaled by 10^scale of the column.
    Decimal(i128),
    /// Text (CHAR, VARCHAR, TEXT).
    Text(String),
    /// BOOL.
    Bool(bool),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    /// BYTEA.
    Bytes(Vec<u8>),
}

/// A borrowed view of a [`Value`]: what the encoders read. The parser
/// makes these straight from a record's bytes (a text field is a slice of
/// the record, not a copy); [`Value::view`] makes one from a value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    /// SQL NULL.
    Null,
    /// Any integer type.
    Int(i64),
    /// A float (canonical: one NaN; -0 kept).
    Float(f64),
    /// Scaled by 10^scale of the column.
    Decimal(i128),
    /// Text (CHAR, VARCHAR, TEXT).
    Text(&'a str),
    /// BOOL.
    Bool(bool),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    /// BYTEA.
    Bytes(&'a [u8]),
}

impl Value {
    /// The value as a [`ValueRef`] borrowing it.
    pub fn view(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Int(*v),
            Value::Float(v) => ValueRef::Float(*v),
            Value::Decimal(v) => ValueRef::Decimal(*v),
            Value::Text(v) => ValueRef::Text(v),
            Value::Bool(v) => ValueRef::Bool(*v),
            Value::Date(v) => ValueRef::Date(*v),
            Value::Timestamp(v) => ValueRef::Timestamp(*v),
            Value::Bytes(v) => ValueRef::Bytes(v),
        }
    }
}

/// The value of one hex digit.
fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A field's text as an error message shows it: in double quotes, as it
/// was written (a backslash stays one backslash, unlike `{:?}`), with
/// control characters escaped (`\t`, `\n`, `\u{1b}`) so the message stays
/// one line, and cut after 64 characters, naming the field's full length.
pub fn shown(s: &str) -> String {
    const MAX: usize = 64;
    let mut out = String::with_capacity(s.len().min(MAX * 4) + 2);
    out.push('"');
    for (i, c) in s.chars().enumerate() {
        if i == MAX {
            out.push_str(&format!("\"... ({} bytes in all)", s.len()));
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Parses `s` as a value of type `ty` (never NULL: NULL markers are the
/// CSV dialect's business). The error is the reason, for the caller to
/// place.
pub fn parse(ty: &ColumnType, s: &str) -> Result<Value, String> {
    match ty {
        ColumnType::SmallInt => int(s, i16::MIN as i64, i16::MAX as i64, "SMALLINT"),
        ColumnType::Int => int(s, i32::MIN as i64, i32::MAX as i64, "INT"),
        ColumnType::BigInt => int(s, i64::MIN, i64::MAX, "BIGINT"),
        ColumnType::Double => {
            let t = s.trim();
            let f: f64 = t
                .parse()
                .map_err(|_| format!("{} is not a number", shown(s)))?;
            // `1e400` parses as infinity: out of range, as PostgreSQL says,
            // unless infinity is what was written.
            let named = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
            if f.is_infinite() && named != "inf" && named != "infinity" {
                return Err(format!("{} is out of range for DOUBLE", shown(s)));
            }
            // `1e-400` parses as zero: out of range too (PostgreSQL says
            // so), where a subnormal like 4.9e-324 is a value. A zero is
            // written with no non-zero digit before its exponent.
            if f == 0.0 {
                let mantissa = named.split(['e', 'E']).next().unwrap_or_default();
                if mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
                    return Err(format!("{} is out of range for DOUBLE", shown(s)));
                }
            }
            Ok(Value::Float(canonical_nan(f)))
        }
        ColumnType::Decimal { precision, scale } => decimal(s, *precision, *scale),
        ColumnType::Char(n) | ColumnType::Varchar(n) => {
            check_length(s, *n, ty)?;
            Ok(Value::Text(s.to_string()))
        }
        ColumnType::Text => Ok(Value::Text(s.to_string())),
        ColumnType::Bool => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "1" | "yes" | "y" => Ok(Value::Bool(true)),
            "f" | "false" | "0" | "no" | "n" => Ok(Value::Bool(false)),
            _ => Err(format!("{} is not a BOOL", shown(s))),
        },
        ColumnType::Date => date(s.trim())
            .map(Value::Date)
            .ok_or_else(|| format!("{} is not a DATE (YYYY-MM-DD)", shown(s))),
        ColumnType::Timestamp => timestamp(s.trim()).map(Value::Timestamp).ok_or_else(|| {
            format!(
                "{} is not a TIMESTAMP (YYYY-MM-DD HH:MM:SS[.ffffff])",
                shown(s)
            )
        }),
        ColumnType::Bytea => {
            let hex = s
                .strip_prefix("\\x")
                .ok_or_else(|| format!("{} is not BYTEA hex (\\x...)", shown(s)))?;
            if hex.len() % 2 != 0 {
                return Err(format!("{}: odd number of hex digits", shown(s)));
            }
            // By bytes: slicing the text at every second byte would split a
            // multi-byte character (a panic found by fuzzing).
            hex.as_bytes()
                .chunks(2)
                .map(|p| match (hex_digit(p[0]), hex_digit(p[1])) {
                    (Some(h), Some(l)) => Some(h << 4 | l),
                    _ => None,
                })
                .collect::<Option<Vec<u8>>>()
                .map(Value::Bytes)
                .ok_or_else(|| format!("{} is not BYTEA hex (\\x...)", shown(s)))
        }
    }
}

/// [`parse`] into `slot`, reusing the allocation of a text value already
/// there (the parser keeps one row of values per chunk, so text columns
/// cost no allocation per field).
pub fn parse_into(ty: &ColumnType, s: &str, slot: &mut Value) -> Result<(), String> {
    let limit = match ty {
        ColumnType::Char(n) | ColumnType::Varchar(n) => Some(*n),
        ColumnType::Text => None,
        _ => {
            *slot = parse(ty, s)?;
            return Ok(());
        }
    };
    if let Some(n) = limit {
        check_length(s, n, ty)?;
    }
    match slot {
        Value::Text(t) => {
            t.clear();
            t.push_str(s);
        }
        _ => *slot = Value::Text(s.to_string()),
    }
    Ok(())
}

/// Whether [`parse_ref`] handles columns of type `ty` (its `Some`
/// cases).
pub fn parses_to_ref(ty: &ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::SmallInt
            | ColumnType::Int
            | ColumnType::BigInt
            | ColumnType::Char(_)
            | ColumnType::Varchar(_)
            | ColumnType::Text
    )
}

/// [`parse`] for the types whose value can borrow the text or needs no
/// allocation, straight to a [`ValueRef`]: integers of plain ASCII digits
/// (the common case, computed here; anything else, like a sign, spaces or
/// an overflow, goes through [`parse`], so the result and the error are
/// `parse`'s exactly), CHAR, VARCHAR and TEXT (a slice of `s`). `None`:
/// the type has no such path (the caller uses [`parse_into`]).
pub fn parse_ref<'a>(ty: &ColumnType, s: &'a str) -> Option<Result<ValueRef<'a>, String>> {
    if let Some(v) = Fast::of(ty).parse(s) {
        return Some(Ok(v));
    }
    Some(match ty {
        ColumnType::Char(n) | ColumnType::Varchar(n) => {
            check_length(s, *n, ty).map(|()| ValueRef::Text(s))
        }
        ColumnType::Text => Ok(ValueRef::Text(s)),
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => match parse(ty, s) {
            Ok(Value::Int(i)) => Ok(ValueRef::Int(i)),
            Ok(other) => Err(format!("internal: {other:?} parsed as an integer")),
            Err(e) => Err(e),
        },
        _ => return None,
    })
}

/// The common case of a column's values: a text no longer (in bytes)
/// than its column's limit in characters, an integer of at most 18 plain
/// ASCII digits within its type's range. Anything else (`None` from
/// [`Fast::parse`]) needs [`parse_ref`] or [`parse_into`] (its value or
/// its error). [`parse_ref`] starts with it; the import's parser
/// (`parse::parse_chunk`) decides each column's `Fast` once per chunk and
/// calls it inline, since a call and a match on the type per field were
/// about 70 instructions of W1's ~5,000 a row.
#[derive(Clone, Copy)]
pub(crate) enum Fast {
    /// CHAR(n), VARCHAR(n) (`Some(n)`) or TEXT (`None`).
    Text(Option<usize>),
    /// SMALLINT, INT, BIGINT: the type's range.
    Int(i64, i64),
    /// Every other type.
    None,
}

impl Fast {
    pub(crate) fn of(ty: &ColumnType) -> Fast {
        use ColumnType as T;
        match ty {
            T::Char(n) | T::Varchar(n) => Fast::Text(Some(*n as usize)),
            T::Text => Fast::Text(None),
            T::SmallInt => Fast::Int(i16::MIN.into(), i16::MAX.into()),
            T::Int => Fast::Int(i32::MIN.into(), i32::MAX.into()),
            T::BigInt => Fast::Int(i64::MIN, i64::MAX),
            _ => Fast::None,
        }
    }

    #[inline]
    pub(crate) fn parse(self, s: &str) -> Option<ValueRef<'_>> {
        match self {
            // A character takes at least one byte.
            Fast::Text(Some(n)) if s.len() <= n => Some(ValueRef::Text(s)),
            Fast::Text(None) => Some(ValueRef::Text(s)),
            Fast::Int(lo, hi) => {
                let b = s.as_bytes();
                if b.is_empty() || b.len() > 18 || !b.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                let v = b.iter().fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
                (lo <= v && v <= hi).then_some(ValueRef::Int(v))
            }
            _ => None,
        }
    }
}

/// A CHAR(n) or VARCHAR(n) value holds at most `n` characters.
fn check_length(s: &str, n: u32, ty: &ColumnType) -> Result<(), String> {
    // A character takes at least one byte: a short text needs no count.
    if s.len() <= n as usize {
        return Ok(());
    }
    let chars = s.chars().count();
    if chars > n as usize {
        return Err(format!(
            "value of {chars} characters is longer than {}",
            ty.sql()
        ));
    }
    Ok(())
}

/// The text form of `v` (a column of type `ty`); NULL is the caller's.
pub fn format(ty: &ColumnType, v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Decimal(d) => {
            let scale = match ty {
                ColumnType::Decimal { scale, .. } => *scale,
                _ => 0,
            };
            format_decimal(*d, scale)
        }
        Value::Text(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Date(d) => {
            let (y, m, dd) = civil_from_days(*d as i64);
            format!("{y:04}-{m:02}-{dd:02}")
        }
        Value::Timestamp(t) => {
            let days = t.div_euclid(86_400_000_000);
            let rem = t.rem_euclid(86_400_000_000);
            let (y, m, d) = civil_from_days(days);
            let secs = rem / 1_000_000;
            let micros = rem % 1_000_000;
            let base = format!(
                "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            );
            if micros == 0 {
                base
            } else {
                format!("{base}.{micros:06}")
            }
        }
        Value::Bytes(b) => {
            let mut s = String::with_capacity(2 + b.len() * 2);
            s.push_str("\\x");
            for x in b {
                s.push_str(&format!("{x:02x}"));
            }
            s
        }
    }
}

/// Every NaN becomes the one positive quiet NaN (a row's value; -0.0 is
/// kept, see [`canonical_float`] for keys).
pub fn canonical_nan(f: f64) -> f64 {
    if f.is_nan() {
        f64::NAN
    } else {
        f
    }
}

/// -0.0 becomes 0.0 and every NaN the one positive quiet NaN, so equal SQL
/// values have equal key encodings.
pub fn canonical_float(f: f64) -> f64 {
    if f == 0.0 {
        0.0
    } else {
        canonical_nan(f)
    }
}

fn int(s: &str, lo: i64, hi: i64, name: &str) -> Result<Value, String> {
    let t = s.trim();
    let v: i64 = t.parse().map_err(|_| {
        // Digits (after a sign) that do not fit an i64: out of range for
        // BIGINT as SMALLINT's and INT's are for theirs.
        let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            format!("{t} is out of range for {name}")
        } else {
            format!("{} is not an integer", shown(s))
        }
    })?;
    if v < lo || v > hi {
        return Err(format!("{v} is out of range for {name}"));
    }
    Ok(Value::Int(v))
}

fn decimal(s: &str, precision: u32, scale: u32) -> Result<Value, String> {
    let t = s.trim();
    let bad = || format!("{} is not a DECIMAL", shown(s));
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (int_part, frac_part) = match digits.split_once('.') {
        Some((i, f)) => (i, f),
        None => (digits, ""),
    };
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    if frac_part.len() > scale as usize {
        return Err(format!(
            "{} has more than {scale} fractional digits (DECIMAL({precision},{scale}))",
            shown(s)
        ));
    }
    let int_digits = int_part.trim_start_matches('0');
    if int_digits.len() > (precision - scale) as usize {
        return Err(format!(
            "{} does not fit DECIMAL({precision},{scale})",
            shown(s)
        ));
    }
    let mut v: i128 = 0;
    for b in int_digits.bytes().chain(frac_part.bytes()) {
        v = v * 10 + (b - b'0') as i128;
    }
    for _ in frac_part.len()..scale as usize {
        v *= 10;
    }
    Ok(Value::Decimal(if neg { -v } else { v }))
}

fn format_decimal(d: i128, scale: u32) -> String {
    let neg = d < 0;
    let a = d.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = if a.len() <= scale {
        format!("{}{a}", "0".repeat(scale + 1 - a.len()))
    } else {
        a
    };
    let (i, f) = padded.split_at(padded.len() - scale);
    let sign = if neg { "-" } else { "" };
    if scale == 0 {
        format!("{sign}{i}")
    } else {
        format!("{sign}{i}.{f}")
    }
}

fn num(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn date(s: &str) -> Option<i32> {
    let mut it = s.splitn(3, '-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (num(y)?, num(m)?, num(d)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    i32::try_from(days_from_civil(y, m, d)).ok()
}

fn timestamp(s: &str) -> Option<i64> {
    if s.len() < 19 || !s.is_char_boundary(10) || !s.is_char_boundary(11) {
        return None;
    }
    let days = date(&s[..10])? as i64;
    if !matches!(&s[10..11], " " | "T") {
        return None;
    }
    let time = &s[11..];
    let (hms, frac) = match time.split_once('.') {
        Some((a, b)) => (a, b),
        None => (time, ""),
    };
    let mut it = hms.split(':');
    let (h, mi, se) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || h.len() != 2 || mi.len() != 2 || se.len() != 2 {
        return None;
    }
    let (h, mi, se) = (num(h)?, num(mi)?, num(se)?);
    if h > 23 || mi > 59 || se > 59 || frac.len() > 6 || (time.contains('.') && frac.is_empty()) {
        return None;
    }
    let mut micros = if frac.is_empty() { 0 } else { num(frac)? };
    for _ in frac.len()..6 {
        micros *= 10;
    }
    Some(days * 86_400_000_000 + (h * 3600 + mi * 60 + se) * 1_000_000 + micros)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian (year, month, day) of `z` days after
/// 1970-01-01 (negative: before it), as [`Value::Date`] counts them.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    /// A bad value is shown as written: one backslash stays one, a
    /// control character is escaped so the message stays one line, a
    /// long field is cut with its length named.
    #[test]
    fn bad_values_are_shown_as_written() {
        for (text, want) in [
            ("1\\2", "\"1\\2\" is not an integer"),
            ("1\t2", "\"1\\t2\" is not an integer"),
            ("é!", "\"é!\" is not an integer"),
        ] {
            assert_eq!(parse(&ColumnType::Int, text).unwrap_err(), want, "{text:?}");
        }
        let long = "9".repeat(70) + "x";
        let e = parse(&ColumnType::BigInt, &long).unwrap_err();
        assert_eq!(
            e,
            format!(
                "\"{}\"... (71 bytes in all) is not an integer",
                "9".repeat(64)
            )
        );
        let e = parse(&ColumnType::Bytea, "\\xzz").unwrap_err();
        assert_eq!(e, "\"\\xzz\" is not BYTEA hex (\\x...)");
    }

    #[test]
    fn text_forms_round_trip() {
        let cases: &[(ColumnType, &str, &str)] = &[
            (ColumnType::Int, " 42", "42"),
            (
                ColumnType::Decimal {
                    precision: 10,
                    scale: 2,
                },
                "-1.5",
                "-1.50",
            ),
            (
                ColumnType::Decimal {
                    precision: 10,
                    scale: 2,
                },
                ".05",
                "0.05",
            ),
            (
                ColumnType::Decimal {
                    precision: 4,
                    scale: 0,
                },
                "0009999",
                "9999",
            ),
            (ColumnType::Date, "2000-02-29", "2000-02-29"),
            (ColumnType::Date, "1969-12-31", "1969-12-31"),
            (
                ColumnType::Timestamp,
                "1900-01-01T00:00:00.5",
                "1900-01-01 00:00:00.500000",
            ),
            (ColumnType::Bytea, "\\x00FF", "\\x00ff"),
            (ColumnType::Bool, "YES", "true"),
            (ColumnType::Double, "-0", "-0"),
            (ColumnType::Double, "-0.0", "-0"),
            (ColumnType::Double, "0e-999", "0"),
            (ColumnType::Double, "-0.000e5", "-0"),
        ];
        for (ty, input, text) in cases {
            let v = parse(ty, input).unwrap();
            assert_eq!(&format(ty, &v), text, "{input}");
            assert_eq!(parse(ty, text).unwrap(), v);
        }
        for (ty, bad) in [
            (ColumnType::SmallInt, "40000"),
            (
                ColumnType::Decimal {
                    precision: 4,
                    scale: 2,
                },
                "123.4",
            ),
            (
                ColumnType::Decimal {
                    precision: 4,
                    scale: 2,
                },
                "1.234",
            ),
            (ColumnType::Date, "2001-02-29"),
            (ColumnType::Timestamp, "2001-01-01 24:00:00"),
            (ColumnType::Varchar(2), "abc"),
            (ColumnType::Bytea, "\\x0"),
            (ColumnType::Double, "1e400"),
            (ColumnType::Double, "-1e400"),
        ] {
            assert!(parse(&ty, bad).is_err(), "{bad}");
        }
        // Out of range, said as such (an underflow was silently 0, a
        // BIGINT overflow "not an integer").
        for (ty, bad, want) in [
            (
                ColumnType::Double,
                "1e-400",
                "\"1e-400\" is out of range for DOUBLE",
            ),
            (
                ColumnType::Double,
                "-2.5E-330",
                "\"-2.5E-330\" is out of range for DOUBLE",
            ),
            (
                ColumnType::BigInt,
                "9223372036854775808",
                "9223372036854775808 is out of range for BIGINT",
            ),
            (
                ColumnType::BigInt,
                "-9223372036854775809",
                "-9223372036854775809 is out of range for BIGINT",
            ),
            (
                ColumnType::Int,
                "99999999999999999999",
                "99999999999999999999 is out of range for INT",
            ),
            (ColumnType::BigInt, "12a", "\"12a\" is not an integer"),
        ] {
            assert_eq!(parse(&ty, bad).unwrap_err(), want, "{bad}");
        }
        // -0 keeps its sign in a row value.
        let Value::Float(z) = parse(&ColumnType::Double, "-0.0").unwrap() else {
            panic!("not a float")
        };
        assert!(z == 0.0 && z.is_sign_negative());
        // A subnormal is a value, not an underflow.
        assert_eq!(
            parse(&ColumnType::Double, "4.9e-324").unwrap(),
            Value::Float(f64::from_bits(1))
        );
        // Infinity written as such is a value, as in PostgreSQL.
        for ok in ["inf", "-Infinity", "+INF"] {
            assert!(parse(&ColumnType::Double, ok).is_ok(), "{ok}");
        }
    }

    /// Every column type, for the fast-path checks.
    fn all_types() -> Vec<ColumnType> {
        vec![
            ColumnType::SmallInt,
            ColumnType::Int,
            ColumnType::BigInt,
            ColumnType::Double,
            ColumnType::Decimal {
                precision: 8,
                scale: 2,
            },
            ColumnType::Char(3),
            ColumnType::Varchar(5),
            ColumnType::Text,
            ColumnType::Bool,
            ColumnType::Date,
            ColumnType::Timestamp,
            ColumnType::Bytea,
        ]
    }

    #[test]
    fn parses_to_ref_names_exactly_parse_refs_types() {
        for ty in all_types() {
            assert_eq!(parses_to_ref(&ty), parse_ref(&ty, "1").is_some(), "{ty:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 4000, ..proptest::prelude::ProptestConfig::default()
        })]

        /// The fast path gives exactly `parse`'s value or error, on text
        /// made of digits, signs, spaces, letters and multi-byte
        /// characters, up to 25 characters (past i64's 19 digits).
        #[test]
        fn parse_ref_agrees_with_parse(
            text in "[0-9]{0,25}|[-+ 0-9]{0,22}|[0-9a-zé\u{3000} -]{0,8}",
            t in 0usize..12,
        ) {
            let ty = &all_types()[t];
            if let Some(fast) = parse_ref(ty, &text) {
                let general = parse(ty, &text);
                let fast = fast.map(|v| match v {
                    ValueRef::Int(i) => Value::Int(i),
                    ValueRef::Text(s) => Value::Text(s.to_string()),
                    other => panic!("{other:?} from the fast path"),
                });
                proptest::prop_assert_eq!(fast, general, "{:?} {:?}", ty, text);
            }
        }
    }

    #[test]
    fn civil_days_agree_both_ways() {
        for z in -800_000..800_000i64 {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }
}
