//! Table definitions read from SQL DDL.
//!
//! Owns [`Schema`] (the tables of one DDL file), [`Table`], [`Column`],
//! [`ColumnType`] and [`Index`], and the translation from `sqlparser`'s
//! PostgreSQL-dialect AST. Invariants of a [`Table`]: column names are
//! unique (case-insensitively, like unquoted SQL identifiers); index 0 is the
//! primary key (the declared one, or the hidden row id column
//! [`ROWID_COLUMN`] appended last when none is declared); primary-key columns
//! are NOT NULL; secondary index names are unique within the table. Anything
//! the importer cannot honour (foreign keys, defaults, CHECK, unknown types,
//! expressions in indexes) is an error naming the statement and the
//! unsupported part, never silently ignored.

use crate::error::{Error, Result};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    CharacterLength, ColumnOption, DataType, ExactNumberInfo, Expr, ObjectName, Statement,
    TableConstraint,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// The name of the hidden primary-key column of a table declared without a
/// primary key: a BIGINT assigned by the importer, increasing in input order.
pub const ROWID_COLUMN: &str = "_rowid";

/// Largest DECIMAL precision: values are held as a 128-bit scaled integer.
pub const MAX_DECIMAL_PRECISION: u32 = 38;

/// The scale of a DECIMAL/NUMERIC declared without one (PostgreSQL's
/// unconstrained NUMERIC has none; a fixed scale keeps keys order-preserving).
pub const DEFAULT_DECIMAL_SCALE: u32 = 9;

/// A column's type. Integers of every width are held as `i64` (range checked
/// on input); REAL, FLOAT and DOUBLE are all 64-bit floats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// SMALLINT (16-bit range).
    SmallInt,
    /// INT, INTEGER (32-bit range).
    Int,
    /// BIGINT.
    BigInt,
    /// REAL, FLOAT, DOUBLE (64-bit).
    Double,
    /// DECIMAL(p,s), NUMERIC: a 128-bit integer scaled by 10^s.
    Decimal {
        /// Total digits (at most 38).
        precision: u32,
        /// Digits after the point.
        scale: u32,
    },
    /// CHAR(n): at most n characters (values are not space-padded).
    Char(u32),
    /// VARCHAR(n): at most n characters.
    Varchar(u32),
    /// TEXT, VARCHAR without a length.
    Text,
    /// BOOL, BOOLEAN.
    Bool,
    /// DATE (proleptic Gregorian).
    Date,
    /// TIMESTAMP without time zone, microseconds.
    Timestamp,
    /// BYTEA.
    Bytea,
}

impl ColumnType {
    /// The SQL spelling, as stored in the catalog and shown by `tables`.
    pub fn sql(&self) -> String {
        match self {
            ColumnType::SmallInt => "SMALLINT".into(),
            ColumnType::Int => "INT".into(),
            ColumnType::BigInt => "BIGINT".into(),
            ColumnType::Double => "DOUBLE".into(),
            ColumnType::Decimal { precision, scale } => format!("DECIMAL({precision},{scale})"),
            ColumnType::Char(n) => format!("CHAR({n})"),
            ColumnType::Varchar(n) => format!("VARCHAR({n})"),
            ColumnType::Text => "TEXT".into(),
            ColumnType::Bool => "BOOL".into(),
            ColumnType::Date => "DATE".into(),
            ColumnType::Timestamp => "TIMESTAMP".into(),
            ColumnType::Bytea => "BYTEA".into(),
        }
    }

    /// Whether values are text (UTF-8 checked, length limited).
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// A column.
pub struct Column {
    /// Name as declared.
    pub name: String,
    /// Type.
    pub ty: ColumnType,
    /// NOT NULL (always for primary-key columns).
    pub not_null: bool,
}

/// An index: the primary key (index id 0) or a secondary index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// Name (the primary key's is `primary`).
    pub name: String,
    /// Positions in [`Table::columns`].
    pub columns: Vec<usize>,
    /// A second row with the same values is a duplicate.
    pub unique: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// A table: its columns and indexes.
pub struct Table {
    /// Name as declared (matched case-insensitively).
    pub name: String,
    /// Columns in declaration order (then the hidden row id, if any).
    pub columns: Vec<Column>,
    /// `indexes[0]` is the primary key; the rest are secondary indexes in
    /// declaration order. An index's id is its position.
    pub indexes: Vec<Index>,
    /// True when the last column is the hidden [`ROWID_COLUMN`].
    pub hidden_rowid: bool,
}

impl Table {
    /// The primary key.
    pub fn primary(&self) -> &Index {
        &self.indexes[0]
    }

    /// Columns the input supplies: every column but the hidden row id.
    pub fn input_columns(&self) -> &[Column] {
        if self.hidden_rowid {
            &self.columns[..self.columns.len() - 1]
        } else {
            &self.columns
        }
    }

    /// Position of column `name` (case-insensitive).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Position of index `name` (case-insensitive).
    pub fn index_by_name(&self, name: &str) -> Option<usize> {
        self.indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// Checks the invariants stated in the module documentation.
    pub fn validate(&self) -> Result<()> {
        // The catalog's text form separates fields with tabs and items with
        // newlines; a name holding a control character would not survive.
        let names = std::iter::once(&self.name)
            .chain(self.columns.iter().map(|c| &c.name))
            .chain(self.indexes.iter().map(|i| &i.name));
        for n in names {
            if n.is_empty() || n.chars().any(char::is_control) {
                return Err(Error::schema(format!(
                    "table {}: the name {n:?} is empty or holds a control character",
                    self.name
                )));
            }
        }
        for (i, c) in self.columns.iter().enumerate() {
            if self.columns[..i]
                .iter()
                .any(|d| d.name.eq_ignore_ascii_case(&c.name))
            {
                return Err(Error::schema(format!(
                    "table {}: column {} declared twice",
                    self.name, c.name
                )));
            }
        }
        let Some(pk) = self.indexes.first() else {
            return Err(Error::schema(format!(
                "table {}: no primary key",
                self.name
            )));
        };
        if pk.columns.is_empty() {
            return Err(Error::schema(format!(
                "table {}: empty primary key",
                self.name
            )));
        }
        // A column number past the end (a damaged catalog entry: found by
        // fuzzing) is reported below, not indexed here.
        for c in pk.columns.iter().filter_map(|&c| self.columns.get(c)) {
            if !c.not_null {
                return Err(Error::schema(format!(
                    "table {}: primary-key column {} must be NOT NULL",
                    self.name, c.name
                )));
            }
        }
        for (i, ix) in self.indexes.iter().enumerate() {
            if self.indexes[..i]
                .iter()
                .any(|j| j.name.eq_ignore_ascii_case(&ix.name))
            {
                return Err(Error::schema(format!(
                    "table {}: index {} declared twice",
                    self.name, ix.name
                )));
            }
            if ix.columns.iter().any(|&c| c >= self.columns.len()) {
                return Err(Error::schema(format!(
                    "table {}: index {} names a column that does not exist",
                    self.name, ix.name
                )));
            }
            // `PRIMARY KEY (id, id)`: a key would need the value twice.
            if let Some(c) = ix
                .columns
                .iter()
                .enumerate()
                .find_map(|(k, c)| ix.columns[..k].contains(c).then_some(*c))
            {
                return Err(Error::schema(format!(
                    "table {}: index {} names column {} twice",
                    self.name, ix.name, self.columns[c].name
                )));
            }
        }
        Ok(())
    }
}

/// The tables of one DDL file, in declaration order.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    /// The tables.
    pub tables: Vec<Table>,
}

impl Schema {
    /// Parses `CREATE TABLE` and `CREATE [UNIQUE] INDEX` statements.
    pub fn parse(sql: &str) -> Result<Schema> {
        let stmts = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .map_err(|e| Error::schema(format!("SQL does not parse: {}", located(&e, sql))))?;
        let mut schema = Schema::default();
        for stmt in stmts {
            match &stmt {
                Statement::CreateTable(ct) => {
                    let t = create_table(ct, &stmt)?;
                    if schema.table(&t.name).is_some() {
                        return Err(Error::schema(format!(
                            "{}: table {} declared twice",
                            head(&stmt),
                            t.name
                        )));
                    }
                    schema.tables.push(t);
                }
                Statement::CreateIndex(ci) => {
                    let tname = object_name(&ci.table_name);
                    let what = head(&stmt);
                    let Some(t) = schema
                        .tables
                        .iter_mut()
                        .find(|t| t.name.eq_ignore_ascii_case(&tname))
                    else {
                        return Err(Error::schema(format!(
                            "{what}: table {tname} is not declared before it"
                        )));
                    };
                    let unsupported =
                        |part: &str| Err(Error::schema(format!("{what}: {part} is not supported")));
                    if ci.predicate.is_some() {
                        return unsupported("a partial index (WHERE)");
                    }
                    if !ci.include.is_empty() {
                        return unsupported("INCLUDE");
                    }
                    if ci.using.is_some() {
                        return unsupported("USING");
                    }
                    let Some(name) = &ci.name else {
                        return unsupported("an index without a name");
                    };
                    let mut cols = Vec::new();
                    for c in &ci.columns {
                        let Expr::Identifier(id) = &c.expr else {
                            return unsupported(&format!("the index expression {}", c.expr));
                        };
                        if c.options.asc == Some(false) {
                            return unsupported("a DESC index column");
                        }
                        let Some(i) = t.column_index(&id.value) else {
                            return Err(Error::schema(format!(
                                "{what}: no column {}{} in table {}",
                                id.value,
                                at(id),
                                t.name
                            )));
                        };
                        cols.push(i);
                    }
                    t.indexes.push(Index {
                        name: object_name(name),
                        columns: cols,
                        unique: ci.unique,
                    });
                    t.validate().map_err(|e| in_statement(&what, e))?;
                }
                _ => {
                    return Err(Error::schema(format!(
                        "{}: only CREATE TABLE and CREATE [UNIQUE] INDEX are supported",
                        head(&stmt)
                    )))
                }
            }
        }
        Ok(schema)
    }

    /// Table `name` (case-insensitive).
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }
}

/// The statement's opening words, to name it in an error.
/// The parser's message, with where the text ends when the parser ran
/// out of it: `sqlparser` gives the line and column of every token it
/// objects to except the end of the input, which has none.
fn located(e: &sqlparser::parser::ParserError, sql: &str) -> String {
    let msg = e.to_string();
    if !msg.ends_with("found: EOF") {
        return msg;
    }
    // Just after the last character that is not white space, as the
    // parser counts them (lines and columns from 1, columns in chars).
    let text = sql.trim_end();
    let line = text.lines().count().max(1);
    let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("{msg} (the schema ends there, after line {line}, column {column}: a statement is not finished)")
}

/// The statement as errors name it: where it is in the schema (the line of
/// its first name, as the parser counts lines, from 1) and its text, cut at
/// 60 characters.
fn head(stmt: &Statement) -> String {
    let s = stmt.to_string();
    let cut: String = s.chars().take(60).collect();
    let text = if cut.len() < s.len() {
        format!("`{cut}...`")
    } else {
        format!("`{cut}`")
    };
    let start = stmt.span().start;
    if start.line > 0 {
        format!("line {}: {text}", start.line)
    } else {
        text
    }
}

/// ` (line L, column C)` for a name the parser placed, else nothing.
fn at(id: &sqlparser::ast::Ident) -> String {
    let l = id.span.start;
    if l.line > 0 {
        format!(" (line {}, column {})", l.line, l.column)
    } else {
        String::new()
    }
}

fn object_name(n: &ObjectName) -> String {
    n.to_string().trim_matches('"').to_string()
}

fn create_table(ct: &sqlparser::ast::CreateTable, stmt: &Statement) -> Result<Table> {
    let what = head(stmt);
    let unsupported =
        |part: String| -> Error { Error::schema(format!("{what}: {part} is not supported")) };
    if ct.query.is_some() || ct.like.is_some() || ct.clone.is_some() {
        return Err(unsupported("CREATE TABLE ... AS/LIKE/CLONE".into()));
    }
    let name = object_name(&ct.name);
    let mut columns = Vec::new();
    let mut pk: Option<Vec<usize>> = None;
    let mut uniques: Vec<Vec<usize>> = Vec::new();
    for (i, cd) in ct.columns.iter().enumerate() {
        let ty = column_type(&cd.data_type).map_err(|part| {
            unsupported(format!("column {}{}: {part}", cd.name.value, at(&cd.name)))
        })?;
        let mut not_null = false;
        for opt in &cd.options {
            match &opt.option {
                ColumnOption::NotNull => not_null = true,
                ColumnOption::Null => not_null = false,
                ColumnOption::Unique { is_primary, .. } => {
                    if *is_primary {
                        if pk.is_some() {
                            return Err(Error::schema(format!(
                                "{what}: more than one PRIMARY KEY"
                            )));
                        }
                        pk = Some(vec![i]);
                        not_null = true;
                    } else {
                        uniques.push(vec![i]);
                    }
                }
                other => {
                    return Err(unsupported(format!(
                        "column {}{}: option `{other}`",
                        cd.name.value,
                        at(&cd.name)
                    )))
                }
            }
        }
        columns.push(Column {
            name: cd.name.value.clone(),
            ty,
            not_null,
        });
    }
    let find = |cols: &[sqlparser::ast::Ident]| -> Result<Vec<usize>> {
        cols.iter()
            .map(|id| {
                columns
                    .iter()
                    .position(|c: &Column| c.name.eq_ignore_ascii_case(&id.value))
                    .ok_or_else(|| {
                        Error::schema(format!("{what}: no column {}{}", id.value, at(id)))
                    })
            })
            .collect()
    };
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey { columns: cols, .. } => {
                if pk.is_some() {
                    return Err(Error::schema(format!("{what}: more than one PRIMARY KEY")));
                }
                pk = Some(find(cols)?);
            }
            TableConstraint::Unique { columns: cols, .. } => uniques.push(find(cols)?),
            other => return Err(unsupported(format!("the constraint `{other}`"))),
        }
    }
    let hidden_rowid = pk.is_none();
    let pk = match pk {
        Some(p) => {
            for &c in &p {
                columns[c].not_null = true;
            }
            p
        }
        None => {
            if columns
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(ROWID_COLUMN))
            {
                return Err(Error::schema(format!(
                    "{what}: a table without a primary key cannot have a column named {ROWID_COLUMN}"
                )));
            }
            columns.push(Column {
                name: ROWID_COLUMN.into(),
                ty: ColumnType::BigInt,
                not_null: true,
            });
            vec![columns.len() - 1]
        }
    };
    let mut indexes = vec![Index {
        name: "primary".into(),
        columns: pk,
        unique: true,
    }];
    for u in uniques {
        let n = format!(
            "{}_{}_key",
            name,
            u.iter()
                .map(|&c| columns[c].name.as_str())
                .collect::<Vec<_>>()
                .join("_")
        );
        indexes.push(Index {
            name: n,
            columns: u,
            unique: true,
        });
    }
    let t = Table {
        name,
        columns,
        indexes,
        hidden_rowid,
    };
    t.validate().map_err(|e| in_statement(&what, e))?;
    Ok(t)
}

/// A validation error placed in its statement: `what: reason`, without a
/// second "schema: " inside the first.
fn in_statement(what: &str, e: Error) -> Error {
    match e {
        Error::Schema(m) => Error::schema(format!("{what}: {m}")),
        e => Error::schema(format!("{what}: {e}")),
    }
}

fn column_type(dt: &DataType) -> std::result::Result<ColumnType, String> {
    let len = |l: &Option<CharacterLength>, dflt: Option<u32>| match l {
        // A zero length holds no value but the empty string (PostgreSQL
        // refuses it too: "length for type varchar must be at least 1").
        Some(CharacterLength::IntegerLength { length: 0, .. }) => {
            Err(format!("type {dt}: the length must be at least 1"))
        }
        Some(CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
            .map_err(|_| format!("length {length} of type {dt}"))
            .map(Some),
        Some(CharacterLength::Max) => Err(format!("type {dt}")),
        None => Ok(dflt),
    };
    Ok(match dt {
        DataType::SmallInt(None) | DataType::Int2(None) => ColumnType::SmallInt,
        DataType::Int(None) | DataType::Integer(None) | DataType::Int4(None) => ColumnType::Int,
        DataType::BigInt(None) | DataType::Int8(None) => ColumnType::BigInt,
        DataType::Real
        | DataType::Float(_)
        | DataType::Float4
        | DataType::Float8
        | DataType::DoublePrecision
        | DataType::Double(ExactNumberInfo::None) => ColumnType::Double,
        DataType::Decimal(info) | DataType::Numeric(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => {
                    (MAX_DECIMAL_PRECISION as u64, DEFAULT_DECIMAL_SCALE as u64)
                }
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
            };
            if precision == 0 || precision > MAX_DECIMAL_PRECISION as u64 || scale > precision {
                return Err(format!(
                    "type {dt} (precision 1..={MAX_DECIMAL_PRECISION}, scale at most the precision)"
                ));
            }
            ColumnType::Decimal {
                precision: precision as u32,
                scale: scale as u32,
            }
        }
        DataType::Char(l) | DataType::Character(l) => {
            ColumnType::Char(len(l, Some(1))?.unwrap_or(1))
        }
        DataType::Varchar(l) | DataType::CharacterVarying(l) => match len(l, None)? {
            Some(n) => ColumnType::Varchar(n),
            None => ColumnType::Text,
        },
        DataType::Text => ColumnType::Text,
        DataType::Bool | DataType::Boolean => ColumnType::Bool,
        DataType::Date => ColumnType::Date,
        DataType::Timestamp(_, sqlparser::ast::TimezoneInfo::None)
        | DataType::Timestamp(_, sqlparser::ast::TimezoneInfo::WithoutTimeZone) => {
            ColumnType::Timestamp
        }
        DataType::Bytea => ColumnType::Bytea,
        other => return Err(format!("type {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tables_indexes_and_constraints() {
        let s = Schema::parse(
            "CREATE TABLE a (x INT PRIMARY KEY, y VARCHAR(10) NOT NULL UNIQUE, z DECIMAL(12,2));
             CREATE TABLE b (p BIGINT, q TEXT, r DATE, PRIMARY KEY (q, p));
             CREATE TABLE c (v BOOL, w TIMESTAMP, u BYTEA, f REAL, n NUMERIC);
             CREATE INDEX b_r ON b (r);
             CREATE UNIQUE INDEX c_v ON c (v, w);",
        )
        .unwrap();
        let a = s.table("a").unwrap();
        assert_eq!(a.primary().columns, vec![0]);
        assert_eq!(a.indexes[1].columns, vec![1]);
        assert!(a.indexes[1].unique);
        assert_eq!(
            a.columns[2].ty,
            ColumnType::Decimal {
                precision: 12,
                scale: 2
            }
        );
        let b = s.table("B").unwrap();
        assert_eq!(b.primary().columns, vec![1, 0]);
        assert!(b.columns[1].not_null);
        assert_eq!(b.indexes[1].name, "b_r");
        assert!(!b.indexes[1].unique);
        let c = s.table("c").unwrap();
        assert!(c.hidden_rowid);
        assert_eq!(c.columns.last().unwrap().name, ROWID_COLUMN);
        assert_eq!(c.primary().columns, vec![5]);
        assert_eq!(c.input_columns().len(), 5);
        assert_eq!(c.indexes[1].columns, vec![0, 1]);
    }

    #[test]
    fn errors_after_parsing_name_the_line_and_column() {
        let err = |sql: &str| Schema::parse(sql).unwrap_err().to_string();
        let sql = "CREATE TABLE a (id INT PRIMARY KEY);\n\nCREATE TABLE u (\n  id INT PRIMARY KEY,\n  name FOOBAR\n);";
        let e = err(sql);
        assert!(e.contains("line 3: `CREATE TABLE u"), "{e}");
        assert!(
            e.contains("column name (line 5, column 3): type FOOBAR"),
            "{e}"
        );
        let sql = "CREATE TABLE t (id INT PRIMARY KEY, v INT);\nCREATE INDEX t_w ON t (w);";
        let e = err(sql);
        assert!(e.contains("line 2: `CREATE INDEX"), "{e}");
        assert!(
            e.contains("no column w (line 2, column 24) in table t"),
            "{e}"
        );
        let sql = "CREATE TABLE t (\n  id INT,\n  PRIMARY KEY (idd)\n);";
        let e = err(sql);
        assert!(e.contains("no column idd (line 3, column 16)"), "{e}");
        // A zero length is refused, where it said nothing.
        for t in ["VARCHAR(0)", "CHAR(0)"] {
            let e = err(&format!("CREATE TABLE t (id INT PRIMARY KEY, v {t});"));
            assert!(
                e.contains("column v (line 1, column 37)") && e.contains("must be at least 1"),
                "{t}: {e}"
            );
        }
    }

    #[test]
    fn a_schema_cut_short_is_located_at_its_end() {
        for (sql, line, column) in [
            ("CREATE TABLE t (a INT PRIMARY KEY, b TEXT", 1, 42),
            (
                "CREATE TABLE t (a INT PRIMARY KEY);\nCREATE INDEX i ON t (a\n\n  ",
                2,
                23,
            ),
            ("CREATE TABLE t (a INT PRIMARY KEY, b TEXT -- é\n", 1, 47),
        ] {
            let e = Schema::parse(sql).unwrap_err().to_string();
            assert!(
                e.contains(&format!("after line {line}, column {column}")),
                "{sql:?}: {e}"
            );
        }
        // A token the parser objects to keeps its own location only.
        let e = Schema::parse("CREATE TABLE t (a INT));")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Line: 1, Column: 23") && !e.contains("after line"),
            "{e}"
        );
    }

    #[test]
    fn unsupported_ddl_names_statement_and_part() {
        let cases = [
            (
                "CREATE TABLE t (a INT REFERENCES u(x))",
                "CREATE TABLE t",
                "REFERENCES",
            ),
            (
                "CREATE TABLE t (a INT DEFAULT 3)",
                "CREATE TABLE t",
                "DEFAULT",
            ),
            ("CREATE TABLE t (a JSON)", "CREATE TABLE t", "type JSON"),
            (
                "CREATE TABLE t (a INT, CHECK (a > 0))",
                "CREATE TABLE t",
                "CHECK",
            ),
            (
                "CREATE TABLE t (a INT); CREATE INDEX i ON t ((a + 1))",
                "CREATE INDEX i",
                "expression",
            ),
            (
                "CREATE TABLE t (a INT); CREATE INDEX i ON t (a) WHERE a > 1",
                "CREATE INDEX i",
                "partial",
            ),
            (
                "CREATE TABLE t (a INT); DROP TABLE t",
                "DROP TABLE",
                "only CREATE TABLE",
            ),
            ("CREATE INDEX i ON t (a)", "CREATE INDEX i", "not declared"),
            (
                "CREATE TABLE t (a INT, a INT)",
                "CREATE TABLE t",
                "declared twice",
            ),
            (
                "CREATE TABLE t (a DECIMAL(50,2))",
                "CREATE TABLE t",
                "precision",
            ),
        ];
        for (sql, stmt, part) in cases {
            let e = Schema::parse(sql).unwrap_err().to_string();
            assert!(e.contains(stmt) && e.contains(part), "{sql}: {e}");
            // One "schema: " prefix, not one per layer.
            assert_eq!(e.matches("schema: ").count(), 1, "{sql}: {e}");
        }
    }
}
