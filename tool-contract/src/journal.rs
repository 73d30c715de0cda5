//! The write-ahead attempt log: the store trait and an in-memory store.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::key::IntentKey;
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};
use crate::task::BoxFuture;

/// Whether a record is a promise made before an attempt or the account given after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Written before the attempt starts.
    Start,
    /// Written after the attempt (or after a probe resolved it).
    End,
}

/// One line of the attempt log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `start` or `end`.
    pub phase: Phase,
    /// The task's id.
    pub task: String,
    /// The tool's name.
    pub call: String,
    /// The intent key.
    pub intent_key: IntentKey,
    /// The attempt number, from 1, continuing across restarts.
    pub attempt: u32,
    /// `{task}-{first 8 hex of the key}-a{attempt}`.
    pub attempt_id: String,
    /// When the attempt started, RFC 3339 UTC.
    pub started: String,
    /// The task's budget left when the attempt started, whole seconds.
    pub budget_left_s: u64,
    /// The outcome; `null` on a start record.
    pub outcome: Option<Outcome>,
    /// What is known of the effect; `null` on a start record.
    pub effect_applied: Option<Applied>,
    /// The probe's verdict, when a probe ran.
    pub probe: Option<ProbeMark>,
    /// The one-line message; `null` on a start record.
    pub message: Option<String>,
    /// The tool's value as JSON, on an `ok` end record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

/// How hard an append must try before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// On stable storage before the future resolves (side-effecting starts).
    Synced,
    /// Written, riding the next sync (reads, end records).
    Buffered,
}

/// What the log knows of one intent.
#[derive(Debug, Clone, PartialEq)]
pub struct Recall {
    /// The highest attempt number recorded for the intent.
    pub attempts: u32,
    /// The intent's last record.
    pub last: Record,
}

/// The last word the log holds on an intent.
#[derive(Debug, Clone, PartialEq)]
pub enum LastWord<'a> {
    /// Its last attempt started and never ended: after a crash, it may have landed.
    Unfinished,
    /// It ended `ok`, with the value when one was recorded.
    Ok(Option<&'a serde_json::Value>),
    /// It ended with this outcome (never `ok`).
    Ended(Outcome),
}

impl Recall {
    /// The intent's last word.
    pub fn last_word(&self) -> LastWord<'_> {
        match (self.last.phase, self.last.outcome) {
            (Phase::Start, _) | (Phase::End, None) => LastWord::Unfinished,
            (Phase::End, Some(Outcome::Ok)) => LastWord::Ok(self.last.value.as_ref()),
            (Phase::End, Some(outcome)) => LastWord::Ended(outcome),
        }
    }

    /// `true` when the intent waits on someone: unfinished, or ended `unknown`.
    pub fn is_unresolved(&self) -> bool {
        matches!(self.last_word(), LastWord::Unfinished | LastWord::Ended(Outcome::Unknown))
    }
}

/// An error of the attempt log's storage.
#[derive(Debug, thiserror::Error)]
#[error("attempt log: {0}")]
pub struct JournalError(#[from] pub std::io::Error);

/// A store for the attempt log.
///
/// The embedded default is one append-only file; [`MemoryJournal`] serves tests. A shared backend for
/// several machines implements the same trait.
pub trait Journal: Send + Sync {
    /// Append one record. With [`Durability::Synced`] the future resolves only once the record is on
    /// stable storage.
    fn append<'a>(
        &'a self,
        record: &'a Record,
        durability: Durability,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// What the log holds on one intent.
    fn recall(&self, key: &IntentKey) -> Option<Recall>;

    /// Every intent whose last word is unfinished or `unknown`: the escalation queue.
    fn unresolved(&self) -> Vec<Recall>;
}

/// An attempt log held in memory, for tests and for processes that accept losing it.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    records: Vec<Record>,
    index: HashMap<IntentKey, Recall>,
}

impl MemoryJournal {
    /// An empty log.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<Record> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).records.clone()
    }
}

/// Fold one record into an index of intents: the shared rule of every store.
pub fn index_record(index: &mut HashMap<IntentKey, Recall>, record: &Record) {
    match index.get_mut(&record.intent_key) {
        Some(recall) => {
            recall.attempts = recall.attempts.max(record.attempt);
            // An end record for an older attempt (a late completion) does not hide a newer start.
            if record.attempt >= recall.last.attempt {
                recall.last = record.clone();
            }
        }
        None => {
            index.insert(record.intent_key, Recall { attempts: record.attempt, last: record.clone() });
        }
    }
}

impl Journal for MemoryJournal {
    fn append<'a>(
        &'a self,
        record: &'a Record,
        _durability: Durability,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        index_record(&mut state.index, record);
        state.records.push(record.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn recall(&self, key: &IntentKey) -> Option<Recall> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).index.get(key).cloned()
    }

    fn unresolved(&self) -> Vec<Recall> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut open: Vec<Recall> = state.index.values().filter(|r| r.is_unresolved()).cloned().collect();
        open.sort_by(|a, b| {
            a.last.started.cmp(&b.last.started).then(a.last.attempt_id.cmp(&b.last.attempt_id))
        });
        open
    }
}

/// Format a wall-clock time as RFC 3339 UTC with whole seconds (`2026-11-30T05:12:04Z`).
pub fn rfc3339(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Intent;
    use std::time::Duration;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let at = httpdate::parse_http_date("Mon, 30 Nov 2026 05:12:04 GMT").unwrap();
        assert_eq!(rfc3339(at), "2026-11-30T05:12:04Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    fn record(phase: Phase, attempt: u32, outcome: Option<Outcome>) -> Record {
        Record {
            phase,
            task: "t".into(),
            call: "post".into(),
            intent_key: Intent::new("t", "a", "post", "x").key(),
            attempt,
            attempt_id: format!("t-a{attempt}"),
            started: "2026-11-30T05:12:04Z".into(),
            budget_left_s: 30,
            outcome,
            effect_applied: None,
            probe: None,
            message: None,
            value: None,
        }
    }

    #[tokio::test]
    async fn memory_journal_tracks_the_last_word() {
        let log = MemoryJournal::new();
        let key = Intent::new("t", "a", "post", "x").key();
        assert!(log.recall(&key).is_none());
        log.append(&record(Phase::Start, 1, None), Durability::Synced).await.unwrap();
        assert_eq!(log.recall(&key).unwrap().last_word(), LastWord::Unfinished);
        assert_eq!(log.unresolved().len(), 1);
        log.append(&record(Phase::End, 1, Some(Outcome::Retryable)), Durability::Buffered).await.unwrap();
        assert_eq!(log.recall(&key).unwrap().last_word(), LastWord::Ended(Outcome::Retryable));
        assert!(log.unresolved().is_empty());
        log.append(&record(Phase::Start, 2, None), Durability::Synced).await.unwrap();
        // A late end record of attempt 1 must not hide the unfinished attempt 2.
        log.append(&record(Phase::End, 1, Some(Outcome::Ok)), Durability::Buffered).await.unwrap();
        let recall = log.recall(&key).unwrap();
        assert_eq!((recall.attempts, recall.last_word()), (2, LastWord::Unfinished));
    }
}
