//! A record as a row of `tool_contract.attempts`, and back: one table of its columns ([`COLUMNS`]),
//! from which every statement that writes or reads a record is built and every row is decoded.

use serde::de::DeserializeOwned;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use tool_contract::IntentKey;
use tool_contract::journal::inspect::Stored;
use tool_contract::journal::{Phase, Record, RecordRef};

/// One column of `tool_contract.attempts` that holds a field of a record.
pub(crate) struct Column {
    /// The column's name.
    pub(crate) name: &'static str,
    /// Its SQL type: what the parameter that writes it is cast to (the select list of an
    /// `INSERT .. SELECT` does not take its types from the table).
    pub(crate) sql_type: &'static str,
    /// The field of a record, as the parameter that writes it.
    bind: fn(&RecordRef<'_>) -> Value,
    /// Read the column, at position `at` of a row, into its field of `record`.
    read: fn(&Row, usize, &mut Record) -> Result<(), String>,
}

/// The columns that hold a record, in the order of the parameters `$1..` ([`Fields::params`]) and of
/// every select list ([`select_list`]): the one place a record's fields are listed for PostgreSQL.
pub(crate) const COLUMNS: [Column; 18] = [
    Column {
        name: "intent",
        sql_type: "bytea",
        bind: |r| Value::Bytes(r.intent_key.as_bytes().to_vec()),
        read: |row, at, r| {
            let bytes: &[u8] = row.try_get(at).map_err(|e| e.to_string())?;
            let bytes: [u8; 16] = bytes.try_into().map_err(|_| format!("{} bytes", bytes.len()))?;
            r.intent_key = key_of(bytes);
            Ok(())
        },
    },
    Column {
        name: "attempt",
        sql_type: "bigint",
        bind: |r| Value::Int(i64::from(r.attempt)),
        read: |row, at, r| {
            let attempt: i64 = row.try_get(at).map_err(|e| e.to_string())?;
            r.attempt = u32::try_from(attempt).map_err(|_| format!("{attempt}"))?;
            Ok(())
        },
    },
    Column {
        name: "phase",
        sql_type: "text",
        bind: |r| Value::Word(Some(r.phase.as_str())),
        read: |row, at, r| {
            let word = text(row, at)?;
            r.phase = Phase::parse(&word).ok_or_else(|| format!("{word:?}"))?;
            Ok(())
        },
    },
    Column {
        name: "task",
        sql_type: "text",
        bind: |r| Value::Text(Some(r.task.to_owned())),
        read: |row, at, r| {
            r.task = text(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "tool",
        sql_type: "text",
        bind: |r| Value::Text(Some(r.call.to_owned())),
        read: |row, at, r| {
            r.call = text(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "attempt_id",
        sql_type: "text",
        bind: |r| Value::Text(Some(r.attempt_id.to_owned())),
        read: |row, at, r| {
            r.attempt_id = text(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "started",
        sql_type: "text",
        bind: |r| Value::Text(Some(r.started.to_owned())),
        read: |row, at, r| {
            r.started = text(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "budget_left_s",
        sql_type: "bigint",
        // A budget past 292 billion years is kept as the largest one a column holds.
        bind: |r| Value::Int(i64::try_from(r.budget_left_s).unwrap_or(i64::MAX)),
        read: |row, at, r| {
            let budget: i64 = row.try_get(at).map_err(|e| e.to_string())?;
            r.budget_left_s = u64::try_from(budget).map_err(|_| format!("{budget}"))?;
            Ok(())
        },
    },
    Column {
        name: "outcome",
        sql_type: "text",
        bind: |r| Value::Word(r.outcome.map(|o| o.as_str())),
        read: |row, at, r| {
            r.outcome = word(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "effect_applied",
        sql_type: "text",
        bind: |r| Value::Word(r.effect_applied.map(|a| a.as_str())),
        read: |row, at, r| {
            r.effect_applied = word(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "probe",
        sql_type: "text",
        bind: |r| Value::Word(r.probe.map(|p| p.as_str())),
        read: |row, at, r| {
            r.probe = word(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "message",
        sql_type: "text",
        bind: |r| Value::Text(r.message.map(str::to_owned)),
        read: |row, at, r| {
            r.message = row.try_get(at).map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    Column {
        name: "retry_at",
        sql_type: "text",
        bind: |r| Value::Text(r.retry_at.map(str::to_owned)),
        read: |row, at, r| {
            r.retry_at = row.try_get(at).map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    Column {
        name: "sent_by",
        sql_type: "text",
        bind: |r| Value::Text(r.sent_by.map(str::to_owned)),
        read: |row, at, r| {
            r.sent_by = row.try_get(at).map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    Column {
        name: "args",
        sql_type: "text",
        bind: |r| Value::Text(r.args.map(str::to_owned)),
        read: |row, at, r| {
            r.args = row.try_get(at).map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    Column {
        name: "value",
        sql_type: "jsonb",
        bind: |r| Value::Json(r.value.cloned()),
        read: |row, at, r| {
            r.value = row.try_get(at).map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    Column {
        name: "settled",
        sql_type: "jsonb",
        bind: |r| Value::Json(r.settled.and_then(|settled| serde_json::to_value(settled).ok())),
        read: |row, at, r| {
            r.settled = json(row, at)?;
            Ok(())
        },
    },
    Column {
        name: "approval",
        sql_type: "jsonb",
        bind: |r| Value::Json(r.approval.and_then(|approval| serde_json::to_value(approval).ok())),
        read: |row, at, r| {
            r.approval = json(row, at)?;
            Ok(())
        },
    },
];

/// The position in [`COLUMNS`] of the column `name`; a name it does not hold fails the build.
const fn position(name: &str) -> usize {
    let mut at = 0;
    while at < COLUMNS.len() {
        if same(COLUMNS[at].name.as_bytes(), name.as_bytes()) {
            return at;
        }
        at += 1;
    }
    panic!("no such column in COLUMNS")
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The parameter `$n` that writes the column `name` (from 1).
pub(crate) const fn param(name: &str) -> usize {
    position(name) + 1
}

/// Where the intent is in a row of [`select_list`].
pub(crate) const INTENT_AT: usize = position("intent");

/// How many columns [`select_list`] names: what a query selects after them starts here, and the
/// first parameter after a record's is `$AFTER_COLUMNS + 1`.
pub(crate) const AFTER_COLUMNS: usize = COLUMNS.len();

/// The columns of a record, comma separated: the column list of an insert and the select list of a
/// read.
pub(crate) fn select_list() -> String {
    COLUMNS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
}

/// The parameters `$1..` of a record, each cast to its column's type.
pub(crate) fn typed_values() -> String {
    COLUMNS
        .iter()
        .enumerate()
        .map(|(i, c)| format!("${}::{}", i + 1, c.sql_type))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A field's value as an owned statement parameter.
#[derive(Debug, Clone)]
enum Value {
    Bytes(Vec<u8>),
    Int(i64),
    Text(Option<String>),
    /// A word of a fixed vocabulary (a phase, an outcome, an effect, a probe's verdict).
    Word(Option<&'static str>),
    Json(Option<serde_json::Value>),
}

impl Value {
    fn as_param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Value::Bytes(bytes) => bytes,
            Value::Int(n) => n,
            Value::Text(text) => text,
            Value::Word(word) => word,
            Value::Json(json) => json,
        }
    }
}

/// A record's fields as statement parameters, copied out of the caller's record (a store that answers
/// later must not borrow it).
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    pub(crate) intent: [u8; 16],
    pub(crate) attempt: i64,
    pub(crate) attempt_id: String,
    values: [Value; COLUMNS.len()],
}

impl Fields {
    pub(crate) fn of(record: &RecordRef<'_>) -> Fields {
        Fields {
            intent: *record.intent_key.as_bytes(),
            attempt: i64::from(record.attempt),
            attempt_id: record.attempt_id.to_owned(),
            values: COLUMNS.each_ref().map(|column| (column.bind)(record)),
        }
    }

    /// The parameters `$1..$16`, in the order of [`COLUMNS`].
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); COLUMNS.len()] {
        self.values.each_ref().map(Value::as_param)
    }
}

/// The record a row of [`select_list`] holds; what is wrong with it otherwise.
pub(crate) fn record_of(row: &Row) -> Result<Record, String> {
    let mut record = Record {
        phase: Phase::Start,
        task: String::new(),
        call: String::new(),
        intent_key: key_of([0; 16]),
        attempt: 0,
        attempt_id: String::new(),
        started: String::new(),
        budget_left_s: 0,
        outcome: None,
        effect_applied: None,
        probe: None,
        message: None,
        retry_at: None,
        sent_by: None,
        args: None,
        value: None,
        settled: None,
        approval: None,
    };
    for (at, column) in COLUMNS.iter().enumerate() {
        (column.read)(row, at, &mut record).map_err(|e| format!("{}: {e}", column.name))?;
    }
    // The rule the fields keep together, as deserialising a record checks it.
    match record.problem() {
        Some(problem) => Err(problem),
        None => Ok(record),
    }
}

/// A row of [`select_list`] followed by its owner and write time, as [`crate::sql::Texts::records`]
/// selects it.
pub(crate) fn stored_of(row: &Row) -> Result<Stored, String> {
    Ok(Stored {
        record: record_of(row)?,
        owner: row.try_get(AFTER_COLUMNS).map_err(|e| format!("owner: {e}"))?,
        written_at: row.try_get(AFTER_COLUMNS + 1).map_err(|e| format!("written_at: {e}"))?,
    })
}

/// The key of 16 stored bytes.
pub(crate) fn key_of(bytes: [u8; 16]) -> IntentKey {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(32);
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    // 32 lowercase hex digits always parse.
    IntentKey::parse(&hex).unwrap_or_else(|_| IntentKey::derive("", "", "", &hex, None))
}

/// A text column that may not be null.
fn text(row: &Row, at: usize) -> Result<String, String> {
    row.try_get::<_, Option<String>>(at).map_err(|e| e.to_string())?.ok_or_else(|| "null".to_owned())
}

/// An outcome, effect or probe verdict from the word it is stored as.
fn word<T: DeserializeOwned>(row: &Row, at: usize) -> Result<Option<T>, String> {
    let stored: Option<String> = row.try_get(at).map_err(|e| e.to_string())?;
    stored
        .map(|s| serde_json::from_value(serde_json::Value::String(s.clone())).map_err(|_| format!("{s:?}")))
        .transpose()
}

/// An account (a settlement, an approval) from the JSON it is stored as.
fn json<T: DeserializeOwned>(row: &Row, at: usize) -> Result<Option<T>, String> {
    let stored: Option<serde_json::Value> = row.try_get(at).map_err(|e| e.to_string())?;
    stored.map(|json| serde_json::from_value(json).map_err(|e| e.to_string())).transpose()
}

#[cfg(test)]
mod tests {
    use tool_contract::journal::{ApprovalNote, ApprovalStep, Settlement, Verdict, Via};
    use tool_contract::probe::ProbeMark;
    use tool_contract::{Applied, Outcome};

    use super::*;
    use crate::testing::PgServer;
    use crate::{PgJournal, PgOptions};

    /// A settled record with every field a settled record may hold set, none to its blank value.
    fn settled() -> Record {
        Record {
            phase: Phase::Settled,
            task: "ord-7741".to_owned(),
            call: "refund".to_owned(),
            intent_key: tool_contract::key::Intent::new("ord-7741", "agent", "refund", "r-9").key(),
            attempt: 3,
            attempt_id: "ord-7741-a3".to_owned(),
            started: "2026-12-01T03:00:00Z".to_owned(),
            budget_left_s: 17,
            outcome: Some(Outcome::Ok),
            effect_applied: Some(Applied::Yes),
            probe: Some(ProbeMark::Landed),
            message: Some("settled: landed".to_owned()),
            retry_at: Some("2026-12-01T03:00:30Z".to_owned()),
            sent_by: Some("2026-12-01T03:00:12Z".to_owned()),
            args: Some("0123456789abcdef0123456789abcdef".to_owned()),
            value: Some(serde_json::json!({ "refund": 12 })),
            settled: Some(Settlement {
                verdict: Verdict::Landed,
                by: "carol".to_owned(),
                via: Via::Operator,
                evidence: "the bank statement shows it".to_owned(),
                at: "2026-12-01T03:01:00Z".to_owned(),
                seen: Some("2026-12-01T03:00:40Z".to_owned()),
                os_user: Some("uid 1000 (carol)".to_owned()),
            }),
            approval: None,
        }
    }

    /// An approval record: the one field a settled record cannot hold.
    fn question() -> Record {
        Record {
            phase: Phase::Approval,
            outcome: None,
            effect_applied: None,
            probe: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: Some(ApprovalNote {
                step: ApprovalStep::Asked,
                by: "an operator".to_owned(),
                why: "503 from the bank".to_owned(),
                at: "2026-12-01T03:02:00Z".to_owned(),
                until: Some("2026-12-01T03:07:00Z".to_owned()),
                os_user: None,
                question: None,
                asks: Default::default(),
                asked_in: None,
                args: None,
                shows: Default::default(),
            }),
            ..settled()
        }
    }

    /// The fields of `record` that hold what a row decoder starts from (the record [`record_of`]
    /// fills in): a field no column reads stays so. Every field is named, so a field added to
    /// [`Record`] is a compile error here until it is given a value in the records above.
    fn blank_fields(record: &Record) -> Vec<&'static str> {
        let Record {
            phase,
            task,
            call,
            intent_key,
            attempt,
            attempt_id,
            started,
            budget_left_s,
            outcome,
            effect_applied,
            probe,
            message,
            retry_at,
            sent_by,
            args,
            value,
            settled,
            approval,
        } = record;
        let blank = [
            ("phase", *phase == Phase::Start),
            ("task", task.is_empty()),
            ("call", call.is_empty()),
            ("intent_key", *intent_key == key_of([0; 16])),
            ("attempt", *attempt == 0),
            ("attempt_id", attempt_id.is_empty()),
            ("started", started.is_empty()),
            ("budget_left_s", *budget_left_s == 0),
            ("outcome", outcome.is_none()),
            ("effect_applied", effect_applied.is_none()),
            ("probe", probe.is_none()),
            ("message", message.is_none()),
            ("retry_at", retry_at.is_none()),
            ("sent_by", sent_by.is_none()),
            ("args", args.is_none()),
            ("value", value.is_none()),
            ("settled", settled.is_none()),
            ("approval", approval.is_none()),
        ];
        blank.into_iter().filter(|(_, blank)| *blank).map(|(name, _)| name).collect()
    }

    /// Issue 31 item 5: the table of columns holds every field of a record. Two records that between
    /// them set every field (a settlement and an approval question) are written by the statement built
    /// from [`COLUMNS`] and read back through the select list and decoder built from it: a field the
    /// table left out would come back blank.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_field_of_a_record_is_written_and_read_back() {
        let (settled, question) = (settled(), question());
        let both_blank: Vec<_> =
            blank_fields(&settled).into_iter().filter(|f| blank_fields(&question).contains(f)).collect();
        assert!(both_blank.is_empty(), "set these fields in one of the records: {both_blank:?}");
        assert_eq!((settled.problem(), question.problem()), (None, None), "the records are valid");

        let server = PgServer::shared().expect("PostgreSQL for the tests");
        let conninfo = server.database("row_columns").await.expect("a database");
        let journal = PgJournal::connect_with(&conninfo, PgOptions::default()).await.expect("connects");
        let written = vec![Fields::of(&settled.as_record_ref()), Fields::of(&question.as_record_ref())];
        journal.inner().append(written, true).await.expect("stored");
        let read: Vec<Record> =
            journal.records(None).await.expect("read").into_iter().map(|stored| stored.record).collect();
        assert_eq!(read, vec![settled, question]);
    }

    /// The table of columns agrees with the table the migrations create: each column's name and type,
    /// and no column of `attempts` that holds a record field is missing from it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_columns_are_those_the_migrations_create() {
        let server = PgServer::shared().expect("PostgreSQL for the tests");
        let conninfo = server.database("row_schema").await.expect("a database");
        let _migrated = PgJournal::connect_with(&conninfo, PgOptions::default()).await.expect("connects");
        let (client, connection) =
            tokio_postgres::connect(&conninfo, tokio_postgres::NoTls).await.expect("connects");
        tokio::spawn(connection);
        let rows = client
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = 'tool_contract' AND table_name = 'attempts' ORDER BY ordinal_position",
                &[],
            )
            .await
            .expect("the columns");
        let in_table: Vec<(String, String)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        for column in &COLUMNS {
            assert!(
                in_table.iter().any(|(name, ty)| name == column.name && ty == column.sql_type),
                "{} {} is not a column of tool_contract.attempts: {in_table:?}",
                column.name,
                column.sql_type
            );
        }
        // The columns that are the store's, not the record's.
        let not_record = ["seq", "owner", "written_at"];
        for (name, _) in &in_table {
            assert!(
                not_record.contains(&name.as_str()) || COLUMNS.iter().any(|c| c.name == name),
                "tool_contract.attempts has a column {name} that COLUMNS does not list"
            );
        }
        assert_eq!(param("intent"), INTENT_AT + 1);
    }
}
