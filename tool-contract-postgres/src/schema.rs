//! The store's tables, created and migrated when a worker connects.
//!
//! Every worker of a fleet runs the migration on connect. It takes a transaction-scoped advisory lock
//! first, so workers starting at once run it one after another: the first applies what is missing,
//! the others find it applied. The steps and the version rows that record them commit in one
//! transaction, so a worker killed mid-migration leaves the schema as it was.

use tokio_postgres::Client;

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: i32 = 6;

/// The advisory lock key of the migration: "tcmigr" in ASCII, so it is recognisable in `pg_locks`.
const MIGRATION_LOCK: i64 = 0x7463_6d69_6772;

/// The version table, created before anything else (and before the version is read).
const BOOTSTRAP: &str = "
CREATE SCHEMA IF NOT EXISTS tool_contract;
CREATE TABLE IF NOT EXISTS tool_contract.schema_version (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
";

/// The migrations, the one for version `n` at `n - 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    // 1: the append-only attempt log and the claims.
    "
CREATE TABLE tool_contract.attempts (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    intent bytea NOT NULL CHECK (octet_length(intent) = 16),
    attempt bigint NOT NULL CHECK (attempt >= 0),
    phase text NOT NULL CHECK (phase IN ('start', 'end')),
    task text NOT NULL,
    tool text NOT NULL,
    attempt_id text NOT NULL,
    started text NOT NULL,
    budget_left_s bigint NOT NULL,
    outcome text,
    effect_applied text,
    probe text,
    message text,
    retry_at text,
    value jsonb,
    owner text,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE tool_contract.attempts IS
    'tool-contract attempt log: one row per record, never updated; owner is set on fenced starts only';
-- The fence: one fenced start per (intent, attempt), whoever believes it holds the claim.
CREATE UNIQUE INDEX attempts_fence ON tool_contract.attempts (intent, attempt)
    WHERE phase = 'start' AND owner IS NOT NULL;
-- An intent's records, its highest attempt, and its last word (the last record of the highest attempt).
CREATE INDEX attempts_by_intent ON tool_contract.attempts (intent, attempt, seq);
CREATE INDEX attempts_by_task ON tool_contract.attempts (task, seq);
CREATE TABLE tool_contract.claims (
    intent bytea PRIMARY KEY CHECK (octet_length(intent) = 16),
    owner text NOT NULL,
    lease_until timestamptz NOT NULL
);
COMMENT ON TABLE tool_contract.claims IS
    'tool-contract claims: who may start the next attempt of an intent, until lease_until on this server''s clock';
",
    // 2: settlements, a person's verdict on an attempt in doubt: a record of phase 'settled' with its
    // account (verdict, by, via, evidence, at) as JSON; the first settlement of an attempt stands.
    "
ALTER TABLE tool_contract.attempts DROP CONSTRAINT attempts_phase_check;
ALTER TABLE tool_contract.attempts ADD CONSTRAINT attempts_phase_check
    CHECK (phase IN ('start', 'end', 'settled'));
ALTER TABLE tool_contract.attempts ADD COLUMN settled jsonb;
ALTER TABLE tool_contract.attempts ADD CONSTRAINT attempts_settled_account
    CHECK ((phase = 'settled') = (settled IS NOT NULL));
CREATE UNIQUE INDEX attempts_settled ON tool_contract.attempts (intent, attempt) WHERE phase = 'settled';
",
    // 3: approvals, a question to a person before the next attempt of a `money` call and its answer:
    // a record of phase 'approval' with its account (step, by, why, at, until) as JSON. Never an
    // intent's last word; the rule that one answer counts is kept by `approval_step`, under a lock.
    "
ALTER TABLE tool_contract.attempts DROP CONSTRAINT attempts_phase_check;
ALTER TABLE tool_contract.attempts ADD CONSTRAINT attempts_phase_check
    CHECK (phase IN ('start', 'end', 'settled', 'approval'));
ALTER TABLE tool_contract.attempts ADD COLUMN approval jsonb;
ALTER TABLE tool_contract.attempts ADD CONSTRAINT attempts_approval_account
    CHECK ((phase = 'approval') = (approval IS NOT NULL));
",
    // 4: whether an intent has any record, read on a snapshot of its own: what the claim asks once it
    // holds the intent, so a new intent's claim answers without a second statement. A volatile
    // PL/pgSQL function runs its query on a snapshot taken when it is called, after the claim's row is
    // written: it sees every record a previous holder committed before letting go, which a subquery of
    // the claim, on the statement's snapshot taken before any wait on that row, could miss.
    "
CREATE FUNCTION tool_contract.intent_has_records(key bytea) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
    RETURN EXISTS (SELECT 1 FROM tool_contract.attempts WHERE intent = key);
END
$body$;
",
    // 5: on a record about an attempt, when the call that made it ended (`sent_by`, rounded up: a later
    // call's landing horizon runs from it) and the digest of the arguments it ran with (`args`).
    "
ALTER TABLE tool_contract.attempts ADD COLUMN sent_by text;
ALTER TABLE tool_contract.attempts ADD COLUMN args text;
",
    // 6: MCP tasks, a call of an intent kept for a client to poll: a record of phase 'mcp_task' with
    // its account as JSON in `value`. Never an attempt's, never an intent's last word.
    "
ALTER TABLE tool_contract.attempts DROP CONSTRAINT attempts_phase_check;
ALTER TABLE tool_contract.attempts ADD CONSTRAINT attempts_phase_check
    CHECK (phase IN ('start', 'end', 'settled', 'approval', 'mcp_task'));
ALTER TABLE tool_contract.attempts ADD CONSTRAINT attempts_mcp_task_account
    CHECK (phase <> 'mcp_task' OR jsonb_typeof(value) = 'object');
",
];

/// What the migration found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Migrated {
    /// The version found before.
    pub(crate) found: i32,
}

/// Why the schema could not be brought to [`SCHEMA_VERSION`].
pub(crate) enum MigrationError {
    /// The database holds a newer schema than this build knows.
    Newer(i32),
    /// A reader found no attempt log, or one older than this build reads (version found, 0 for none).
    Missing(i32),
    /// The server failed.
    Db(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for MigrationError {
    fn from(e: tokio_postgres::Error) -> Self {
        MigrationError::Db(e)
    }
}

/// Bring the schema to [`SCHEMA_VERSION`], one step at a time, under the migration lock.
pub(crate) async fn migrate(client: &mut Client) -> Result<Migrated, MigrationError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute(BOOTSTRAP).await?;
    let found: i32 =
        tx.query_one("SELECT coalesce(max(version), 0) FROM tool_contract.schema_version", &[]).await?.get(0);
    if found > SCHEMA_VERSION {
        return Err(MigrationError::Newer(found));
    }
    for version in found + 1..=SCHEMA_VERSION {
        // `version` runs from 1 to the array's length.
        let step = usize::try_from(version - 1).unwrap_or(0);
        tx.batch_execute(MIGRATIONS[step]).await?;
        tx.execute("INSERT INTO tool_contract.schema_version (version) VALUES ($1)", &[&version]).await?;
    }
    tx.commit().await?;
    Ok(Migrated { found })
}

/// Check, without changing anything, that the database holds an attempt log of [`SCHEMA_VERSION`]:
/// how a reader opens it.
pub(crate) async fn check(client: &Client) -> Result<Migrated, MigrationError> {
    let exists: bool =
        client.query_one("SELECT to_regclass('tool_contract.schema_version') IS NOT NULL", &[]).await?.get(0);
    if !exists {
        return Err(MigrationError::Missing(0));
    }
    let found: i32 = client
        .query_one("SELECT coalesce(max(version), 0) FROM tool_contract.schema_version", &[])
        .await?
        .get(0);
    match found {
        SCHEMA_VERSION => Ok(Migrated { found }),
        newer if newer > SCHEMA_VERSION => Err(MigrationError::Newer(newer)),
        older => Err(MigrationError::Missing(older)),
    }
}
