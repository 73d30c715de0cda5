//! The statements of the store. Each is one autocommit statement: its times are the server's
//! `clock_timestamp()`, read when the row is checked, never a worker's clock and never `now()`, which
//! stands still for a whole transaction.

use std::sync::LazyLock;

use crate::row::{AFTER_COLUMNS, param, select_list, typed_values};

/// Take or renew the claim on `$1` for owner `$2`, for `$3` seconds from now on the server's clock,
/// unless the caller's deadline `$4` (seconds since 1970 on the server's clock, or null for none) has
/// passed when the statement runs: a claim that reaches the server after its caller gave up (held by
/// a frozen server or a partition) takes nothing and blocks nobody. A row comes back only when the
/// caller holds the claim: the intent was free, its lease had run out, or the caller already held it;
/// with it, whether the intent has no record yet, asked once the row is written on a snapshot of its
/// own (see the function `tool_contract.intent_has_records`, schema version 4), so the caller reads
/// the records in a second statement only when there are some.
///
/// It commits asynchronously: a claim lost with a crashed server was either followed by a synced start
/// (which flushes the WAL, claim included, before it commits) or by nothing, and a holder whose claim
/// is gone is refused its start. The fence, not the claim, is what must be durable.
pub(crate) const CLAIM: &str = "
INSERT INTO tool_contract.claims AS c (intent, owner, lease_until)
SELECT $1::bytea, $2::text, clock_timestamp() + make_interval(secs => $3::float8)
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS durability
WHERE $4::float8 IS NULL OR clock_timestamp() < to_timestamp($4::float8)
ON CONFLICT (intent) DO UPDATE
    SET owner = excluded.owner, lease_until = excluded.lease_until
    WHERE c.lease_until <= clock_timestamp() OR c.owner = excluded.owner
RETURNING c.owner, NOT tool_contract.intent_has_records($1::bytea)";

/// Who holds `$1` and for how many more seconds, if anyone does.
pub(crate) const HOLDER: &str = "
SELECT owner, extract(epoch FROM lease_until - clock_timestamp())::float8
FROM tool_contract.claims
WHERE intent = $1 AND lease_until > clock_timestamp()";

/// Give up `$2`'s claim on `$1`; another owner's claim stays. Asynchronous commit: a release lost
/// with a crashed server only leaves the lease to run out.
pub(crate) const RELEASE: &str = "
DELETE FROM tool_contract.claims
USING (SELECT set_config('synchronous_commit', 'off', true)) AS durability
WHERE intent = $1 AND owner = $2";

/// Why a fenced record about attempt `$2` of `$1` by `$3` was refused: the claim's holder and whether
/// its lease runs, the highest attempt, and whether `$3`'s own start of that attempt is stored (for a
/// start: an earlier try whose answer was lost).
pub(crate) const WHY_REFUSED: &str = "
SELECT
    (SELECT owner FROM tool_contract.claims WHERE intent = $1),
    (SELECT lease_until > clock_timestamp() FROM tool_contract.claims WHERE intent = $1),
    (SELECT coalesce(max(attempt), 0) FROM tool_contract.attempts WHERE intent = $1 AND phase NOT IN ('approval', 'mcp_task')),
    EXISTS (SELECT 1 FROM tool_contract.attempts
            WHERE intent = $1 AND attempt = $2 AND phase = 'start' AND owner = $3)";

/// Serialises the approval steps of intent `$1`: a transaction-scoped advisory lock in a key space of
/// its own ("tcappr" in its high bits), so [`Texts::last_approval`] and the insert after it are one step.
pub(crate) const LOCK_APPROVALS: &str = "SELECT pg_advisory_xact_lock((x'7463617070720000'::bigint) # ('x' || substr(encode($1, 'hex'), 1, 8))::bit(32)::bigint)";

/// The highest attempt of `$1`, if it has any record.
pub(crate) const HIGHEST: &str = "SELECT max(attempt) FROM tool_contract.attempts WHERE intent = $1 AND phase NOT IN ('approval', 'mcp_task')";

/// The parameter after a record's `$1..$16`: the writer of a fenced record.
const OWNER: usize = AFTER_COLUMNS + 1;
/// The parameter after the owner: whether the record commits synchronously ([`durability`]).
const SYNC: usize = AFTER_COLUMNS + 2;

/// Make this statement's commit synchronous (`$n` true: the server's setting, raised to `on` if it is
/// `off`) or asynchronous (`off`), for this transaction only: the autocommit statement it is part of.
fn durability(n: usize) -> String {
    format!(
        "(SELECT set_config('synchronous_commit', CASE WHEN ${n} THEN \
         CASE current_setting('synchronous_commit') WHEN 'off' THEN 'on' \
         ELSE current_setting('synchronous_commit') END ELSE 'off' END, true)) AS durability"
    )
}

/// The statements that write or read records, built once from the table of columns
/// ([`crate::row::COLUMNS`]).
pub(crate) static TEXTS: LazyLock<Texts> = LazyLock::new(Texts::build);

/// The text of each statement that writes or reads records.
pub(crate) struct Texts {
    /// The fenced start: the record `$1..$16` by owner `$17` (durability `$18`), written only when
    /// `$17` holds an unexpired claim on the intent and the attempt is the highest recorded + 1. The
    /// claim row is locked, so a takeover waits for this statement and a start after a takeover sees
    /// the new owner; the unique index `attempts_fence` refuses a second start of one attempt whatever
    /// the claims say.
    pub(crate) start: String,
    /// The fenced end: the end record `$1..$16` (an attempt's end, a probe's verdict, or a person's)
    /// by owner `$17` (durability `$18`), written only when `$17` holds an unexpired claim on the
    /// intent and the record is about an attempt it may write of ([`about_the_attempt`]). The claim
    /// row is locked as the fenced start locks it, so a takeover waits for this statement and an end
    /// written after a takeover sees the new owner: a record held back by a partition and delivered
    /// late is refused.
    pub(crate) end: String,
    /// The fenced end and the release of the claim, in one statement and one commit: as
    /// [`Texts::end`], with the claim row deleted instead of locked, by a delete that is the fence
    /// itself (it takes the row only from an unexpired claim of `$17` and only for a record it may
    /// write, and a takeover waits for it or it re-checks the row the takeover left); the record is
    /// written exactly when the claim row was deleted.
    pub(crate) finish: String,
    /// An unfenced record `$1..$16` (durability `$17`).
    pub(crate) append: String,
    /// The last approval record of `$1` (a question, or its answer).
    pub(crate) last_approval: String,
    /// Every record of `$1`, in the order stored.
    pub(crate) records_of_intent: String,
    /// The MCP task records of `$1`, in the order stored.
    pub(crate) mcp_task_records: String,
    /// The last word of every intent whose last word is unfinished, `unknown` or with its effect
    /// unknown. The last word is the last record of the intent's highest attempt, a settlement of it
    /// first, which is what folding its records in order with `Recall::update` keeps
    /// (`rules::supersedes`). The one record the rule puts over a settlement, a probe's verdict that
    /// the effect landed, is resolved as the settlement is, so leaving it to the settlement here
    /// lists the same intents.
    pub(crate) unresolved: String,
    /// Every record, in the order stored, each with its owner and when the server took it (RFC 3339
    /// UTC, to the second, as the log stamps times): what the inspector shows.
    pub(crate) records: String,
    /// Every record of task `$1`, as [`Texts::records`].
    pub(crate) records_of_task: String,
    /// Every record of intent `$1`, as [`Texts::records`].
    pub(crate) records_of_intent_stored: String,
    /// At most `$2` records stored after `$1` (a `seq`), in the order stored, each with its `seq`:
    /// what a reader following the log reads next.
    pub(crate) records_after: String,
}

/// Whether the end record `$1..$16` is one its writer `$17`, holding the claim, may write: the end of
/// the attempt it started itself (its fenced start row is `$17`'s), or a probe's verdict on the
/// highest attempt, or the settlement of the highest attempt (a person's verdict, under the settler's
/// claim; the unique index `attempts_settled` keeps the first settlement of an attempt). The highest
/// attempt is read only for a probe's verdict or a settlement.
fn about_the_attempt() -> String {
    let (intent, attempt) = (param("intent"), param("attempt"));
    let (phase, probe) = (param("phase"), param("probe"));
    format!(
        "(EXISTS (SELECT 1 FROM tool_contract.attempts
         WHERE intent = ${intent} AND attempt = ${attempt} AND phase = 'start' AND owner = ${OWNER})
 OR ((${probe}::text IS NOT NULL OR ${phase}::text = 'settled')
     AND ${attempt}::bigint = (SELECT coalesce(max(attempt), 0) FROM tool_contract.attempts
                              WHERE intent = ${intent} AND phase NOT IN ('approval', 'mcp_task'))))"
    )
}

impl Texts {
    fn build() -> Texts {
        let columns = select_list();
        let values = typed_values();
        let (intent, attempt) = (param("intent"), param("attempt"));
        // The claim row of the intent held by the writer with its lease running, locked so a takeover
        // waits for the statement.
        let held = format!(
            "held AS (
    SELECT intent FROM tool_contract.claims
    WHERE intent = ${intent} AND owner = ${OWNER} AND lease_until > clock_timestamp()
    FOR UPDATE
)"
        );
        let insert =
            format!("INSERT INTO tool_contract.attempts ({columns}, owner)\nSELECT {values}, ${OWNER}::text");
        let stamped = r#"owner, to_char(written_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"#;
        Texts {
            start: format!(
                "
WITH {held}, highest AS (
    SELECT coalesce(max(attempt), 0) AS n FROM tool_contract.attempts
    WHERE intent = ${intent} AND phase NOT IN ('approval', 'mcp_task')
)
{insert}
FROM held, highest, {}
WHERE highest.n + 1 = ${attempt}
RETURNING seq",
                durability(SYNC)
            ),
            end: format!(
                "
WITH {held}
{insert}
FROM held, {}
WHERE {}
RETURNING seq",
                durability(SYNC),
                about_the_attempt()
            ),
            finish: format!(
                "
WITH released AS (
    DELETE FROM tool_contract.claims
    WHERE intent = ${intent} AND owner = ${OWNER} AND lease_until > clock_timestamp()
      AND {}
    RETURNING intent
)
{insert}
FROM released, {}
RETURNING seq",
                about_the_attempt(),
                durability(SYNC)
            ),
            append: format!(
                "INSERT INTO tool_contract.attempts ({columns})\nSELECT {values}\nFROM {}",
                durability(AFTER_COLUMNS + 1)
            ),
            last_approval: format!(
                "SELECT {columns} FROM tool_contract.attempts WHERE intent = $1 AND phase = 'approval' \
                 ORDER BY seq DESC LIMIT 1"
            ),
            records_of_intent: format!(
                "SELECT {columns} FROM tool_contract.attempts WHERE intent = $1 ORDER BY seq"
            ),
            mcp_task_records: format!(
                "SELECT {columns} FROM tool_contract.attempts WHERE intent = $1 AND phase = 'mcp_task' \
                 ORDER BY seq"
            ),
            unresolved: format!(
                "
SELECT {columns} FROM (
    SELECT DISTINCT ON (intent) {columns}
    FROM tool_contract.attempts
    WHERE phase NOT IN ('approval', 'mcp_task')
    ORDER BY intent, attempt DESC, phase = 'settled' DESC, seq DESC
) AS last
WHERE phase = 'start'
   OR phase = 'end' AND (outcome IS NULL OR outcome = 'unknown' OR effect_applied = 'unknown')"
            ),
            records: format!("SELECT {columns}, {stamped} FROM tool_contract.attempts ORDER BY seq"),
            records_of_task: format!(
                "SELECT {columns}, {stamped} FROM tool_contract.attempts WHERE task = $1 ORDER BY seq"
            ),
            records_of_intent_stored: format!(
                "SELECT {columns}, {stamped} FROM tool_contract.attempts WHERE intent = $1 ORDER BY seq"
            ),
            records_after: format!(
                "SELECT {columns}, seq FROM tool_contract.attempts WHERE seq > $1 ORDER BY seq LIMIT $2"
            ),
        }
    }
}
