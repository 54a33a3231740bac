//! Table definitions read from SQL DDL.
//!
//! Owns [`Schema`] (the tables of one DDL file), [`Table`], [`Column`],
//! [`ColumnType`] and [`Index`], and the translation from `sqlparser`'s
//! PostgreSQL-dialect AST. Invariants of a [`Table`]: column names are
//! unique ignoring ASCII case (names are matched that way everywhere, quoted
//! or not, so two that differ only in case are refused); index 0 is the
//! primary key (the declared one, or the hidden row id column
//! [`ROWID_COLUMN`] appended last when none is declared); primary-key columns
//! are NOT NULL; secondary index names are unique within the table. Anything
//! the importer cannot honour (foreign keys, defaults, CHECK, unknown types,
//! expressions in indexes, TEMPORARY, PARTITION BY, storage parameters,
//! deferred constraints, other statements) is an error naming the statement
//! (by line) and the unsupported part (by line and column where the parser
//! keeps its place), never silently ignored; the few clauses without effect
//! here (IF NOT EXISTS, constraint names, NOT DEFERRABLE, ...) are accepted,
//! as `docs/import.md` lists.

use crate::error::{Error, Result};
use sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use sqlparser::ast::{
    CharacterLength, ColumnOption, ConstraintCharacteristics, CreateTable, DataType,
    DeferrableInitial, ExactNumberInfo, Expr, HiveFormat, Ident, NullsDistinctOption, ObjectName,
    Spanned, Statement, TableConstraint,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer};

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
        let dialect = PostgreSqlDialect {};
        let fail =
            |e: ParserError| Error::schema(format!("SQL does not parse: {}", located(&e, sql)));
        let mut parser = Parser::new(&dialect).try_with_sql(sql).map_err(fail)?;
        // The same tokens the parser reads (same dialect, same text), kept
        // to place the clauses the AST does not locate.
        let tokens = Tokenizer::new(&dialect, sql)
            .tokenize_with_location()
            .map_err(|e| fail(e.into()))?;
        let mut schema = Schema::default();
        loop {
            while parser.consume_token(&Token::SemiColon) {}
            if parser.peek_token().token == Token::EOF {
                break;
            }
            let from = parser.index();
            let start = parser.peek_token().span.start;
            let stmt = parser.parse_statement().map_err(fail)?;
            let own = tokens.get(from..parser.index()).unwrap_or_default();
            let toks = Toks::new(own);
            let next = parser.peek_token();
            if !matches!(next.token, Token::SemiColon | Token::EOF) {
                // Always an error (the parser's own message and place).
                parser.expected("end of statement", next).map_err(fail)?;
            }
            schema.add(&stmt, &head(&stmt, own, start), &toks)?;
        }
        if schema.tables.is_empty() {
            return Err(Error::schema(
                "the schema is empty: it declares no table (CREATE TABLE)",
            ));
        }
        Ok(schema)
    }

    /// Adds what statement `stmt` (named `what` in errors, read from
    /// `toks`) declares.
    fn add(&mut self, stmt: &Statement, what: &str, toks: &Toks) -> Result<()> {
        match stmt {
            Statement::CreateTable(ct) => {
                let t = create_table(ct, what, toks)?;
                let folded = t.name.to_lowercase();
                if let Some(u) = self.tables.iter().find(|u| u.name.to_lowercase() == folded) {
                    return Err(Error::schema(if u.name == t.name {
                        format!("{what}: table {} declared twice", t.name)
                    } else {
                        format!(
                            "{what}: tables {} and {} differ only in case: {CASE_RULE}, so they \
                             would be one table",
                            u.name, t.name
                        )
                    }));
                }
                self.tables.push(t);
            }
            Statement::CreateIndex(ci) => self.create_index(ci, what, toks)?,
            _ => {
                return Err(Error::schema(format!(
                    "{what}: only CREATE TABLE and CREATE [UNIQUE] INDEX are supported"
                )))
            }
        }
        Ok(())
    }

    fn create_index(
        &mut self,
        ci: &sqlparser::ast::CreateIndex,
        what: &str,
        toks: &Toks,
    ) -> Result<()> {
        let tname = object_name(&ci.table_name);
        let Some(t) = self
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
            return unsupported(&format!("a partial index (WHERE{})", toks.seq(&["WHERE"])));
        }
        if !ci.include.is_empty() {
            return unsupported(&format!("INCLUDE{}", toks.seq(&["INCLUDE"])));
        }
        if ci.using.is_some() {
            return unsupported(&format!("USING{}", toks.seq(&["USING"])));
        }
        if !ci.with.is_empty() {
            return unsupported(&format!(
                "WITH ({}){}",
                list(&ci.with),
                toks.seq(&["WITH", "("])
            ));
        }
        if ci.nulls_distinct == Some(false) {
            return unsupported(&format!(
                "NULLS NOT DISTINCT{}",
                toks.seq(&["NULLS", "NOT", "DISTINCT"])
            ));
        }
        let Some(name) = &ci.name else {
            return unsupported("an index without a name");
        };
        let iname = object_name(name);
        let place = at_span(name.span());
        if iname.eq_ignore_ascii_case("primary") {
            return Err(Error::schema(format!(
                "{what}: the index name {iname}{place} is reserved: it names the primary key"
            )));
        }
        if let Some(j) = t
            .indexes
            .iter()
            .find(|j| j.name.eq_ignore_ascii_case(&iname))
        {
            return Err(Error::schema(if j.name == iname {
                format!("{what}: index {iname}{place} declared twice")
            } else {
                format!(
                    "{what}: indexes {} and {iname}{place} differ only in case: {CASE_RULE}, so \
                     they would be one index",
                    j.name
                )
            }));
        }
        let mut cols = Vec::new();
        for c in &ci.columns {
            let Expr::Identifier(id) = &c.expr else {
                return unsupported(&format!("the index expression {}", c.expr));
            };
            if c.options.asc == Some(false) {
                return unsupported(&format!("a DESC index column ({}{})", id.value, at(id)));
            }
            if c.options.nulls_first == Some(false) {
                return unsupported(&format!(
                    "NULLS LAST on column {}{} (NULL sorts first in every index)",
                    id.value,
                    at(id)
                ));
            }
            if c.with_fill.is_some() {
                return unsupported(&format!("WITH FILL on column {}{}", id.value, at(id)));
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
            name: iname,
            columns: cols,
            unique: ci.unique,
        });
        t.validate().map_err(|e| in_statement(what, e))
    }

    /// Table `name` (case-insensitive).
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }
}

/// How names are matched, for the errors about two names that differ only
/// in case.
const CASE_RULE: &str = "names are matched ignoring case, quoted or not (PostgreSQL keeps quoted \
                         names' case apart)";

/// The non-blank tokens of one statement, to place a clause the AST keeps
/// no location for.
struct Toks<'a>(Vec<&'a TokenWithSpan>);

impl<'a> Toks<'a> {
    fn new(tokens: &'a [TokenWithSpan]) -> Toks<'a> {
        Toks(
            tokens
                .iter()
                .filter(|t| !matches!(t.token, Token::Whitespace(_)))
                .collect(),
        )
    }

    /// Whether token `i` is `word` (a keyword, any case, unquoted; or a
    /// punctuation token).
    fn is(&self, i: usize, word: &str) -> bool {
        self.0
            .get(i)
            .is_some_and(|t| t.token.to_string().eq_ignore_ascii_case(word))
    }

    /// ` (line L, column C)` of the first token `pick` picks, else nothing.
    fn find(&self, pick: impl Fn(usize) -> bool) -> String {
        match (0..self.0.len()).find(|&i| pick(i)) {
            Some(i) => at_location(self.0[i].span.start),
            None => String::new(),
        }
    }

    /// ` (line L, column C)` of the first run of tokens `words`.
    fn seq(&self, words: &[&str]) -> String {
        self.find(|i| words.iter().enumerate().all(|(k, w)| self.is(i + k, w)))
    }
}

/// The parser's message, with where the text ends when the parser ran
/// out of it: `sqlparser` gives the line and column of every token it
/// objects to except the end of the input, which has none.
fn located(e: &ParserError, sql: &str) -> String {
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
/// its first word, `start`, as the parser counts lines, from 1) and its
/// text as written, cut at 60 characters. As written: from its tokens
/// (`tokens`, white space and comments between them as one space), not the
/// parser's rendering of it, which leaves out what the parser drops (the
/// `DESC` of `PRIMARY KEY DESC`, refused, so the quote would lack what the
/// error is about) and respells some words (`TEMP` as `TEMPORARY`).
fn head(stmt: &Statement, tokens: &[TokenWithSpan], start: Location) -> String {
    let mut s = String::new();
    let mut gap = false;
    for t in tokens {
        if matches!(t.token, Token::Whitespace(_)) {
            gap = true;
            continue;
        }
        if gap && !s.is_empty() {
            s.push(' ');
        }
        gap = false;
        s.push_str(&t.token.to_string());
    }
    if s.is_empty() {
        s = stmt.to_string();
    }
    let cut: String = s.chars().take(60).collect();
    let text = if cut.len() < s.len() {
        format!("`{cut}...`")
    } else {
        format!("`{cut}`")
    };
    if start.line > 0 {
        format!("line {}: {text}", start.line)
    } else {
        text
    }
}

/// ` (line L, column C)` for a place the parser knows, else nothing.
fn at_location(l: Location) -> String {
    if l.line > 0 {
        format!(" (line {}, column {})", l.line, l.column)
    } else {
        String::new()
    }
}

/// ` (line L, column C)` where a span starts.
fn at_span(s: Span) -> String {
    at_location(s.start)
}

/// ` (line L, column C)` for a name the parser placed, else nothing.
fn at(id: &Ident) -> String {
    at_span(id.span)
}

/// `a, b, c`.
fn list<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn object_name(n: &ObjectName) -> String {
    n.to_string().trim_matches('"').to_string()
}

/// Constraint characteristics other than what the importer does anyway
/// (NOT DEFERRABLE, INITIALLY IMMEDIATE, ENFORCED): a key is checked as
/// the rows are imported, and always.
fn characteristics(c: &Option<ConstraintCharacteristics>, toks: &Toks) -> Option<String> {
    let c = c.as_ref()?;
    if c.deferrable == Some(true) {
        return Some(format!(
            "DEFERRABLE{}",
            toks.find(|i| toks.is(i, "DEFERRABLE") && !(i > 0 && toks.is(i - 1, "NOT")))
        ));
    }
    if c.initially == Some(DeferrableInitial::Deferred) {
        return Some(format!(
            "INITIALLY DEFERRED{}",
            toks.seq(&["INITIALLY", "DEFERRED"])
        ));
    }
    if c.enforced == Some(false) {
        return Some(format!("NOT ENFORCED{}", toks.seq(&["NOT", "ENFORCED"])));
    }
    None
}

fn create_table(ct: &CreateTable, what: &str, toks: &Toks) -> Result<Table> {
    let unsupported =
        |part: String| -> Error { Error::schema(format!("{what}: {part} is not supported")) };
    if ct.temporary {
        return Err(Error::schema(format!(
            "{what}: TEMPORARY{} is not supported: an imported table is permanent",
            toks.find(|i| toks.is(i, "TEMP") || toks.is(i, "TEMPORARY"))
        )));
    }
    if ct.query.is_some() {
        return Err(unsupported(format!(
            "CREATE TABLE ... AS{}",
            toks.seq(&["AS"])
        )));
    }
    if ct.like.is_some() {
        return Err(unsupported(format!("LIKE{}", toks.seq(&["LIKE"]))));
    }
    if ct.clone.is_some() {
        return Err(unsupported(format!("CLONE{}", toks.seq(&["CLONE"]))));
    }
    let name = object_name(&ct.name);
    if ct.columns.is_empty() {
        return Err(Error::schema(format!(
            "{what}: table {name}{} has no columns",
            at_span(ct.name.span())
        )));
    }
    let mut columns = Vec::new();
    // Per column: NULL was declared.
    let mut said_null = Vec::new();
    let mut pk: Option<Vec<usize>> = None;
    let mut uniques: Vec<Vec<usize>> = Vec::new();
    for (i, cd) in ct.columns.iter().enumerate() {
        // `CREATE TABLE a (LIKE b)` reads as a column named LIKE of type b.
        if cd.name.quote_style.is_none() && cd.name.value.eq_ignore_ascii_case("like") {
            return Err(Error::schema(format!(
                "{what}: LIKE{} is not supported: declare the columns",
                at(&cd.name)
            )));
        }
        let column = format!("column {}{}", cd.name.value, at(&cd.name));
        let ty = column_type(&cd.data_type)
            .map_err(|why| Error::schema(format!("{what}: {column}: {why}")))?;
        let mut null: Option<bool> = None;
        for opt in &cd.options {
            match &opt.option {
                ColumnOption::NotNull | ColumnOption::Null => {
                    let n = matches!(opt.option, ColumnOption::Null);
                    if null == Some(!n) {
                        return Err(Error::schema(format!(
                            "{what}: {column}: both NULL and NOT NULL are declared"
                        )));
                    }
                    null = Some(n);
                }
                ColumnOption::Unique {
                    is_primary,
                    characteristics: ch,
                } => {
                    if let Some(part) = characteristics(ch, toks) {
                        return Err(unsupported(format!("{column}: {part}")));
                    }
                    if *is_primary {
                        // The parser reads `PRIMARY KEY DESC` and drops
                        // the DESC: refused as a DESC index column is.
                        let desc = (0..toks.0.len()).find(|&k| {
                            toks.is(k, "PRIMARY") && toks.is(k + 1, "KEY") && toks.is(k + 2, "DESC")
                        });
                        if let Some(k) = desc {
                            return Err(Error::schema(format!(
                                "{what}: {column}: PRIMARY KEY DESC{} is not supported: keys \
                                 are stored in ascending order",
                                at_location(toks.0[k + 2].span.start)
                            )));
                        }
                        if pk.is_some() {
                            return Err(Error::schema(format!(
                                "{what}: more than one PRIMARY KEY"
                            )));
                        }
                        pk = Some(vec![i]);
                    } else {
                        uniques.push(vec![i]);
                    }
                }
                other => return Err(unsupported(format!("{column}: option `{other}`"))),
            }
        }
        if let Some(d) = ct.columns[..i]
            .iter()
            .find(|d| d.name.value.eq_ignore_ascii_case(&cd.name.value))
        {
            return Err(Error::schema(if d.name.value == cd.name.value {
                format!("{what}: {column}: declared twice")
            } else {
                format!(
                    "{what}: columns {}{} and {}{} differ only in case: {CASE_RULE}, so they \
                     would be one column",
                    d.name.value,
                    at(&d.name),
                    cd.name.value,
                    at(&cd.name)
                )
            }));
        }
        said_null.push(null == Some(true));
        columns.push(Column {
            name: cd.name.value.clone(),
            ty,
            not_null: null == Some(false),
        });
    }
    let find = |cols: &[Ident]| -> Result<Vec<usize>> {
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
        let (cols, ch, index_name, index_type, index_options) = match c {
            TableConstraint::PrimaryKey {
                columns,
                characteristics,
                index_name,
                index_type,
                index_options,
                ..
            }
            | TableConstraint::Unique {
                columns,
                characteristics,
                index_name,
                index_type,
                index_options,
                ..
            } => (
                columns,
                characteristics,
                index_name,
                index_type,
                index_options,
            ),
            other => return Err(unsupported(format!("the constraint `{other}`"))),
        };
        let constraint = format!("the constraint `{c}`");
        if let Some(part) = characteristics(ch, toks) {
            return Err(unsupported(format!("{constraint}: {part}")));
        }
        if index_name.is_some() || index_type.is_some() || !index_options.is_empty() {
            return Err(unsupported(format!("{constraint}: its index options")));
        }
        match c {
            TableConstraint::Unique {
                nulls_distinct: NullsDistinctOption::NotDistinct,
                ..
            } => {
                return Err(unsupported(format!(
                    "{constraint}: NULLS NOT DISTINCT{}",
                    toks.seq(&["NULLS", "NOT", "DISTINCT"])
                )))
            }
            TableConstraint::PrimaryKey { .. } => {
                if pk.is_some() {
                    return Err(Error::schema(format!("{what}: more than one PRIMARY KEY")));
                }
                pk = Some(find(cols)?);
            }
            _ => uniques.push(find(cols)?),
        }
    }
    // Whatever else the parser accepted (a table-level clause) has no
    // meaning here: refused, so it is never dropped unseen. What is left
    // once the supported parts are cleared must equal a bare CREATE TABLE.
    if let Some(part) = table_clause(ct, toks) {
        return Err(unsupported(part));
    }
    let hidden_rowid = pk.is_none();
    let pk = match pk {
        Some(p) => {
            for &c in &p {
                if said_null[c] {
                    let cd = &ct.columns[c];
                    return Err(Error::schema(format!(
                        "{what}: column {}{} is declared NULL and is in the PRIMARY KEY, whose \
                         columns are NOT NULL",
                        cd.name.value,
                        at(&cd.name)
                    )));
                }
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
    t.validate().map_err(|e| in_statement(what, e))?;
    Ok(t)
}

/// The first table-level clause of `ct` the importer does not support,
/// named and placed. `IF NOT EXISTS` is accepted (an import into an
/// existing table checks the definitions agree either way).
fn table_clause(ct: &CreateTable, toks: &Toks) -> Option<String> {
    if let Some(p) = &ct.partition_by {
        return Some(format!(
            "PARTITION BY {p}{}",
            toks.seq(&["PARTITION", "BY"])
        ));
    }
    if !ct.with_options.is_empty() {
        return Some(format!(
            "WITH ({}){}",
            list(&ct.with_options),
            toks.seq(&["WITH", "("])
        ));
    }
    if ct.on_commit.is_some() {
        return Some(format!("ON COMMIT{}", toks.seq(&["ON", "COMMIT"])));
    }
    let bare = CreateTableBuilder::new(ct.name.clone())
        .columns(ct.columns.clone())
        .constraints(ct.constraints.clone())
        .if_not_exists(ct.if_not_exists)
        .build();
    let mut seen = ct.clone();
    // The PostgreSQL dialect's parser always sets an empty Hive format.
    if seen.hive_formats == Some(HiveFormat::default()) {
        seen.hive_formats = None;
    }
    if bare != Statement::CreateTable(seen) {
        return Some("a clause other than the columns, constraints and IF NOT EXISTS".into());
    }
    None
}

/// A validation error placed in its statement: `what: reason`, without a
/// second "schema: " inside the first.
fn in_statement(what: &str, e: Error) -> Error {
    match e {
        Error::Schema(m) => Error::schema(format!("{what}: {m}")),
        e => Error::schema(format!("{what}: {e}")),
    }
}

/// The column type `dt` stands for; else why not, as a whole sentence
/// ("type JSON is not supported").
fn column_type(dt: &DataType) -> std::result::Result<ColumnType, String> {
    let len = |l: &Option<CharacterLength>, dflt: Option<u32>| match l {
        // A zero length holds no value but the empty string (PostgreSQL
        // refuses it too: "length for type varchar must be at least 1").
        Some(CharacterLength::IntegerLength { length: 0, .. }) => {
            Err(format!("type {dt}: the length must be at least 1"))
        }
        Some(CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
            .map_err(|_| format!("type {dt}: the length must be at most {}", u32::MAX))
            .map(Some),
        Some(CharacterLength::Max) => Err(format!("type {dt} is not supported")),
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
                    "type {dt} is not supported (precision 1..={MAX_DECIMAL_PRECISION}, scale at \
                     most the precision)"
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
        // A precision other than microseconds' would be dropped unseen
        // (PostgreSQL rounds to it; values here keep microseconds).
        DataType::Timestamp(Some(p), _) if *p != 6 => {
            return Err(format!(
                "type {dt} is not supported: timestamps keep microseconds; write TIMESTAMP \
                 (or TIMESTAMP(6))"
            ))
        }
        DataType::Timestamp(_, sqlparser::ast::TimezoneInfo::None)
        | DataType::Timestamp(_, sqlparser::ast::TimezoneInfo::WithoutTimeZone) => {
            ColumnType::Timestamp
        }
        DataType::Bytea => ColumnType::Bytea,
        other => return Err(format!("type {other} is not supported")),
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
        // A zero length is refused, where it said nothing, in a sentence
        // of its own (it read "...must be at least 1 is not supported").
        for t in ["VARCHAR(0)", "CHAR(0)"] {
            let e = err(&format!("CREATE TABLE t (id INT PRIMARY KEY, v {t});"));
            assert!(
                e.ends_with(&format!(
                    "column v (line 1, column 37): type {t}: the length must be at least 1"
                )),
                "{t}: {e}"
            );
        }
        // Statements the parser keeps no location for (COMMENT, SET) are
        // placed by their first word (they had no line).
        for (sql, line) in [
            (
                "CREATE TABLE t (a INT);\n\nCOMMENT ON COLUMN t.a IS 'x';",
                3,
            ),
            ("CREATE TABLE t (a INT);\n  SET search_path = public;", 2),
            (
                "-- dump\nSET client_encoding = 'UTF8';\nCREATE TABLE t (a INT);",
                2,
            ),
            ("CREATE TABLE t (a INT);\nCOMMENT ON TABLE t IS 'x'", 2),
        ] {
            let e = err(sql);
            assert!(
                e.contains(&format!("line {line}: `"))
                    && e.contains("only CREATE TABLE and CREATE [UNIQUE] INDEX"),
                "{sql:?}: {e}"
            );
        }
    }

    #[test]
    fn an_empty_schema_is_refused() {
        for sql in ["", "  \n", "-- nothing\n/* at all */", ";;"] {
            let e = Schema::parse(sql).unwrap_err().to_string();
            assert_eq!(
                e, "schema: the schema is empty: it declares no table (CREATE TABLE)",
                "{sql:?}"
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
            // Clauses that were accepted and dropped (a user audit): each
            // is refused, named and placed.
            (
                "CREATE TEMP TABLE t (a INT)",
                "line 1: `CREATE TEMP TABLE t (a INT)`",
                "TEMPORARY (line 1, column 8) is not supported: an imported table is permanent",
            ),
            (
                "CREATE TABLE s (a INT);\nCREATE TEMPORARY TABLE t (a INT)",
                "line 2: `CREATE TEMPORARY TABLE t",
                "TEMPORARY (line 2, column 8) is not supported",
            ),
            (
                "CREATE TABLE t (a INT, b DATE)\n  PARTITION BY RANGE (b)",
                "CREATE TABLE t",
                "PARTITION BY RANGE(b) (line 2, column 3) is not supported",
            ),
            (
                "CREATE TABLE t (a INT) WITH (fillfactor=70)",
                "CREATE TABLE t",
                "WITH (fillfactor = 70) (line 1, column 24) is not supported",
            ),
            (
                "CREATE TABLE t (a INT PRIMARY KEY) ON COMMIT DROP",
                "CREATE TABLE t",
                "ON COMMIT (line 1, column 36) is not supported",
            ),
            (
                "CREATE TABLE t (a INT PRIMARY KEY DEFERRABLE INITIALLY DEFERRED)",
                "CREATE TABLE t",
                "column a (line 1, column 17): DEFERRABLE (line 1, column 35) is not supported",
            ),
            (
                "CREATE TABLE t (a INT, PRIMARY KEY (a) INITIALLY DEFERRED)",
                "CREATE TABLE t",
                "INITIALLY DEFERRED (line 1, column 40) is not supported",
            ),
            (
                "CREATE TABLE t (a INT,\n  UNIQUE (a) DEFERRABLE)",
                "CREATE TABLE t",
                "DEFERRABLE (line 2, column 14) is not supported",
            ),
            // The statement is quoted as written: the parser's rendering
            // of it dropped the DESC.
            (
                "CREATE TABLE t (a INT PRIMARY KEY DESC)",
                "line 1: `CREATE TABLE t (a INT PRIMARY KEY DESC)`: column a (line 1, column 17)",
                "PRIMARY KEY DESC (line 1, column 35) is not supported",
            ),
            (
                "CREATE TABLE t (a INT,\n  b INT PRIMARY KEY DESC)",
                "line 1: `CREATE TABLE t (a INT, b INT PRIMARY KEY DESC)`",
                "column b (line 2, column 3): PRIMARY KEY DESC (line 2, column 21) is not \
                 supported: keys are stored in ascending order",
            ),
            (
                "CREATE TABLE t (a INT PRIMARY KEY, t TIMESTAMP(3))",
                "CREATE TABLE t",
                "column t (line 1, column 36): type TIMESTAMP(3) is not supported: timestamps \
                 keep microseconds",
            ),
            (
                "CREATE TABLE t (a TEXT, UNIQUE NULLS NOT DISTINCT (a))",
                "CREATE TABLE t",
                "NULLS NOT DISTINCT (line 1, column 32) is not supported",
            ),
            (
                "CREATE TABLE t (id INT NULL PRIMARY KEY)",
                "CREATE TABLE t",
                "column id (line 1, column 17) is declared NULL and is in the PRIMARY KEY",
            ),
            (
                "CREATE TABLE t (id INT NULL, v INT, PRIMARY KEY (v, id))",
                "CREATE TABLE t",
                "column id (line 1, column 17) is declared NULL and is in the PRIMARY KEY",
            ),
            (
                "CREATE TABLE t (a INT NOT NULL NULL)",
                "CREATE TABLE t",
                "column a (line 1, column 17): both NULL and NOT NULL are declared",
            ),
            (
                "CREATE TABLE a ()",
                "CREATE TABLE a",
                "table a (line 1, column 14) has no columns",
            ),
            (
                "CREATE TABLE a (LIKE b)",
                "CREATE TABLE a",
                "LIKE (line 1, column 17) is not supported",
            ),
            (
                "CREATE TABLE t (a INT); CREATE INDEX i ON t (a) WITH (fillfactor=70)",
                "CREATE INDEX i",
                "WITH (fillfactor = 70) (line 1, column 49) is not supported",
            ),
            (
                "CREATE TABLE t (a INT); CREATE UNIQUE INDEX i ON t (a) NULLS NOT DISTINCT",
                "CREATE UNIQUE INDEX i",
                "NULLS NOT DISTINCT (line 1, column 56) is not supported",
            ),
            (
                "CREATE TABLE t (a INT); CREATE INDEX i ON t (a NULLS LAST)",
                "CREATE INDEX i",
                "NULLS LAST on column a (line 1, column 46)",
            ),
            // Names.
            (
                "CREATE TABLE t (a INT);\nCREATE INDEX primary ON t (a)",
                "line 2: `CREATE INDEX primary",
                "the index name primary (line 2, column 14) is reserved: it names the primary key",
            ),
            (
                "CREATE TABLE t (a INT); CREATE INDEX \"PRIMARY\" ON t (a)",
                "CREATE INDEX",
                "the index name PRIMARY (line 1, column 38) is reserved",
            ),
            (
                "CREATE TABLE t (\"Id\" INT, \"id\" INT)",
                "CREATE TABLE t",
                "columns Id (line 1, column 17) and id (line 1, column 27) differ only in case",
            ),
            (
                "CREATE TABLE \"T\" (a INT); CREATE TABLE t (a INT)",
                "CREATE TABLE t",
                "tables T and t differ only in case",
            ),
            (
                "CREATE TABLE t (a INT, b INT); CREATE INDEX ix ON t (a); CREATE INDEX \"IX\" ON t (b)",
                "CREATE INDEX",
                "indexes ix and IX (line 1, column 71) differ only in case",
            ),
            (
                "CREATE TABLE t (a INT, b INT); CREATE INDEX ix ON t (a); CREATE INDEX ix ON t (b)",
                "CREATE INDEX",
                "index ix (line 1, column 71) declared twice",
            ),
        ];
        for (sql, stmt, part) in cases {
            let e = Schema::parse(sql).unwrap_err().to_string();
            assert!(e.contains(stmt) && e.contains(part), "{sql}: {e}");
            // One "schema: " prefix, not one per layer.
            assert_eq!(e.matches("schema: ").count(), 1, "{sql}: {e}");
        }
    }

    #[test]
    fn harmless_clauses_are_accepted() {
        // Documented in docs/import.md as accepted: they change nothing.
        for sql in [
            "CREATE TABLE IF NOT EXISTS t (a INT PRIMARY KEY)",
            "CREATE TABLE t (a INT CONSTRAINT t_pk PRIMARY KEY)",
            "CREATE TABLE t (a INT, CONSTRAINT t_pk PRIMARY KEY (a))",
            "CREATE TABLE t (a INT PRIMARY KEY NOT DEFERRABLE INITIALLY IMMEDIATE)",
            "CREATE TABLE t (a INT PRIMARY KEY NOT NULL)",
            "CREATE TABLE t (a INT PRIMARY KEY); CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a NULLS FIRST)",
        ] {
            let s = Schema::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let t = s.table("t").unwrap();
            assert_eq!(t.primary().columns, vec![0], "{sql}");
            assert!(t.columns[0].not_null, "{sql}");
            assert_eq!(t.primary().name, "primary", "{sql}");
        }
    }
}
