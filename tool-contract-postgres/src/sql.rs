//! The statements of the store. Each is one autocommit statement: its times are the server's
//! `clock_timestamp()`, read when the row is checked, never a worker's clock and never `now()`, which
//! stands still for a whole transaction.

use crate::row::{COLUMNS, WRITTEN};

/// Take or renew the claim on `$1` for owner `$2`, for `$3` seconds from now on the server's clock,
/// unless the caller's deadline `$4` (seconds since 1970 on the server's clock, or null for none) has
/// passed when the statement runs: a claim that reaches the server after its caller gave up (held by
/// a frozen server or a partition) takes nothing and blocks nobody. A row comes back only when the
/// caller holds the claim: the intent was free, its lease had run out, or the caller already held it.
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
RETURNING c.owner";

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

/// The parameters `$1..$15` of a record, typed as the columns of [`WRITTEN`] (the select list of an
/// `INSERT .. SELECT` does not take its types from the table).
const TYPED_VALUES: &str = "$1::bytea, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::text, \
    $8::bigint, $9::text, $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::jsonb";

/// Make this statement's commit synchronous (`$n` true: the server's setting, raised to `on` if it is
/// `off`) or asynchronous (`off`), for this transaction only: the autocommit statement it is part of.
fn durability(n: u32) -> String {
    format!(
        "(SELECT set_config('synchronous_commit', CASE WHEN ${n} THEN \
         CASE current_setting('synchronous_commit') WHEN 'off' THEN 'on' \
         ELSE current_setting('synchronous_commit') END ELSE 'off' END, true)) AS durability"
    )
}

/// What a fenced record is checked against, in the statement that writes it: the claim row of `$1`
/// held by `$16` with its lease running, locked so a takeover waits for the statement (`held`), and the
/// intent's highest attempt (`highest`).
const FENCE: &str = "WITH held AS (
    SELECT intent FROM tool_contract.claims
    WHERE intent = $1 AND owner = $16 AND lease_until > clock_timestamp()
    FOR UPDATE
), highest AS (
    SELECT coalesce(max(attempt), 0) AS n FROM tool_contract.attempts WHERE intent = $1 AND phase <> 'approval'
)";

/// The fenced start: the record `$1..$15` by owner `$16` (durability `$17`), written only when `$16`
/// holds an unexpired claim on the intent and the attempt is the highest recorded + 1. The claim row is
/// locked, so a takeover waits for this statement and a start after a takeover sees the new owner; the
/// unique index `attempts_fence` refuses a second start of one attempt whatever the claims say.
pub(crate) fn start() -> String {
    format!(
        "
{FENCE}
INSERT INTO tool_contract.attempts ({WRITTEN}, owner)
SELECT {}, $16::text
FROM held, highest, {}
WHERE highest.n + 1 = $2
RETURNING seq",
        TYPED_VALUES,
        durability(17)
    )
}

/// Why a fenced record about attempt `$2` of `$1` by `$3` was refused: the claim's holder and whether
/// its lease runs, the highest attempt, and whether `$3`'s own start of that attempt is stored (for a
/// start: an earlier try whose answer was lost).
pub(crate) const WHY_REFUSED: &str = "
SELECT
    (SELECT owner FROM tool_contract.claims WHERE intent = $1),
    (SELECT lease_until > clock_timestamp() FROM tool_contract.claims WHERE intent = $1),
    (SELECT coalesce(max(attempt), 0) FROM tool_contract.attempts WHERE intent = $1 AND phase <> 'approval'),
    EXISTS (SELECT 1 FROM tool_contract.attempts
            WHERE intent = $1 AND attempt = $2 AND phase = 'start' AND owner = $3)";

/// An unfenced record `$1..$15` (durability `$16`), with its approval account `$17`.
pub(crate) fn append() -> String {
    format!(
        "
INSERT INTO tool_contract.attempts ({WRITTEN}, approval)
SELECT {TYPED_VALUES}, $17::jsonb
FROM {}",
        durability(16)
    )
}

/// Serialises the approval steps of intent `$1`: a transaction-scoped advisory lock in a key space of
/// its own ("tcappr" in its high bits), so [`last_approval`] and the insert after it are one step.
pub(crate) const LOCK_APPROVALS: &str = "SELECT pg_advisory_xact_lock((x'7463617070720000'::bigint) # ('x' || substr(encode($1, 'hex'), 1, 8))::bit(32)::bigint)";

/// The last approval record of `$1` (a question, or its answer).
pub(crate) fn last_approval() -> String {
    format!(
        "SELECT {COLUMNS} FROM tool_contract.attempts WHERE intent = $1 AND phase = 'approval' \
         ORDER BY seq DESC LIMIT 1"
    )
}

/// The fenced end: the end record `$1..$15` (an attempt's end, or a probe's verdict) by owner `$16`
/// (durability `$17`), written only when `$16` holds an unexpired claim on the intent and either
/// started that attempt itself (its fenced start row is `$16`'s) or gives a probe's verdict on the
/// highest attempt, or settles the highest attempt (a person's verdict, under the settler's claim;
/// the unique index `attempts_settled` keeps the first settlement of an attempt); with `$18`, the
/// claim is given up in the same commit. The claim row is locked as the fenced start locks it, so a takeover waits for this statement and an end written after a
/// takeover sees the new owner: a record held back by a partition and delivered late is refused.
pub(crate) fn end() -> String {
    format!(
        "
{FENCE}, written AS (
    INSERT INTO tool_contract.attempts ({WRITTEN}, owner)
    SELECT {}, $16::text
    FROM held, highest, {}
    WHERE EXISTS (SELECT 1 FROM tool_contract.attempts
                  WHERE intent = $1 AND attempt = $2 AND phase = 'start' AND owner = $16)
       OR ($11::text IS NOT NULL AND highest.n = $2::bigint)
       OR ($3::text = 'settled' AND highest.n = $2::bigint)
    RETURNING seq
), released AS (
    DELETE FROM tool_contract.claims
    WHERE $18::bool AND intent = $1 AND owner = $16 AND EXISTS (SELECT 1 FROM written)
)
SELECT seq FROM written",
        TYPED_VALUES,
        durability(17)
    )
}

/// Every record of `$1`, in the order stored.
pub(crate) fn records_of_intent() -> String {
    format!("SELECT {COLUMNS} FROM tool_contract.attempts WHERE intent = $1 ORDER BY seq")
}

/// The highest attempt of `$1`, if it has any record.
pub(crate) const HIGHEST: &str =
    "SELECT max(attempt) FROM tool_contract.attempts WHERE intent = $1 AND phase <> 'approval'";

/// The last word of every intent whose last word is unfinished, `unknown` or with its effect unknown. The last word is the last
/// record of the intent's highest attempt, which is what folding its records in order with
/// `Recall::update` keeps: a record becomes the last word when its attempt is at least the highest
/// seen before it.
pub(crate) fn unresolved() -> String {
    format!(
        "
SELECT {COLUMNS} FROM (
    SELECT DISTINCT ON (intent) {COLUMNS}
    FROM tool_contract.attempts
    WHERE phase <> 'approval'
    ORDER BY intent, attempt DESC, phase = 'settled' DESC, seq DESC
) AS last
WHERE phase = 'start'
   OR phase = 'end' AND (outcome IS NULL OR outcome = 'unknown' OR effect_applied = 'unknown')"
    )
}

/// Every record, or every record of task `$1`, in the order stored, each with its owner and when the
/// server took it (RFC 3339 UTC, to the second, as the log stamps times): what the inspector shows.
pub(crate) fn records(of_task: bool) -> String {
    const STAMPED: &str = r#"owner, to_char(written_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"#;
    if of_task {
        format!("SELECT {COLUMNS}, {STAMPED} FROM tool_contract.attempts WHERE task = $1 ORDER BY seq")
    } else {
        format!("SELECT {COLUMNS}, {STAMPED} FROM tool_contract.attempts ORDER BY seq")
    }
}

/// Every record of intent `$1`, in the order stored, with its owner and write time (as [`records`]).
pub(crate) fn records_of_intent_stored() -> String {
    format!(
        r#"SELECT {COLUMNS}, owner, to_char(written_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM tool_contract.attempts WHERE intent = $1 ORDER BY seq"#
    )
}

/// At most `$2` records stored after `$1` (a `seq`), in the order stored, each with its `seq`: what a
/// reader following the log reads next.
pub(crate) fn records_after() -> String {
    format!("SELECT {COLUMNS}, seq FROM tool_contract.attempts WHERE seq > $1 ORDER BY seq LIMIT $2")
}
