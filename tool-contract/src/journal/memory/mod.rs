//! The in-memory attempt log, for tests and for processes that accept losing it: the reference store,
//! kept plain. [`CompactMemoryJournal`] keeps the same in less memory, for a process that opts in.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use super::leases::Leases;
use super::{
    Answer, Approvals, Claimed, Durability, Journal, JournalError, McpTasks, Owner, Recall, Record, RecordRef,
};
use crate::key::IntentKey;
use crate::rules::{counts_as_attempt, in_doubt, sort_queue, supersedes};

mod compact;
pub use compact::CompactMemoryJournal;

/// An attempt log held in memory, for tests and for processes that accept losing it: every record as a
/// [`Record`], in the order appended, and per intent its highest attempt and last word.
///
/// It is bounded: past [`MemoryJournal::DEFAULT_MAX_INTENTS`] intents (or the number given to
/// [`MemoryJournal::with_max_intents`]), the intents resolved longest ago are forgotten, down to three
/// quarters of the bound; an intent in doubt (unfinished, or ended `unknown`) or claimed by a running
/// call is never forgotten, so a store full of them holds more. A forgotten intent called again is a
/// new call (see the attempt log's chapter, "What a log cannot do once it is gone"): a process that
/// must recognise its intents for longer keeps a file log.
#[derive(Debug)]
pub struct MemoryJournal {
    state: Mutex<Plain>,
    max_intents: usize,
}

impl Default for MemoryJournal {
    fn default() -> Self {
        MemoryJournal { state: Mutex::default(), max_intents: MemoryJournal::DEFAULT_MAX_INTENTS }
    }
}

#[derive(Debug, Default)]
struct Plain {
    /// Every record kept, in the order appended.
    records: Vec<Record>,
    /// Per intent, its highest attempt and where its last word is in `records` (the fold of
    /// [`index_record`](crate::journal::index::index_record)).
    index: HashMap<IntentKey, Kept>,
    /// Who holds which intent.
    leases: Leases,
    /// Each intent's last approval record.
    approvals: super::index::Approvals,
    /// Each intent's MCP task records.
    tasks: super::index::McpTaskRecords,
}

/// The intents to forget once a store holds `held` intents, more than `max` (its bound): of the
/// `settled` ones (resolved, and held by no running call; each with where its last word is, the order
/// it was written in), the oldest, down to three quarters of the bound. `None` until a quarter of the
/// bound can go at once, so a store's rebuild is paid once per that many new intents. The one rule of
/// both in-memory stores.
pub(super) fn to_forget(
    mut settled: Vec<(usize, IntentKey)>,
    held: usize,
    max: usize,
) -> Option<HashSet<IntentKey>> {
    let keep = max - max / 4;
    let open = held - settled.len();
    let forget = settled.len().saturating_sub(keep.saturating_sub(open));
    if forget < (max / 4).max(1) {
        return None;
    }
    settled.sort_unstable();
    Some(settled[..forget].iter().map(|&(_, key)| key).collect())
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    attempts: u32,
    last: usize,
}

impl Plain {
    fn store(&mut self, record: Record) {
        self.approvals.note(&record.as_record_ref());
        self.tasks.note(&record.as_record_ref());
        let at = self.records.len();
        let kept = self.index.entry(record.intent_key).or_insert(Kept { attempts: record.attempt, last: at });
        if supersedes(
            record.phase,
            record.probe,
            record.attempt,
            kept.attempts,
            self.records.get(kept.last).map_or(super::Phase::Start, |r| r.phase),
        ) {
            kept.last = at;
        }
        if counts_as_attempt(record.phase) {
            kept.attempts = kept.attempts.max(record.attempt);
        }
        self.records.push(record);
    }

    fn recall(&self, kept: Kept) -> Recall {
        Recall { attempts: kept.attempts, last: self.records[kept.last].clone() }
    }

    fn last(&self, kept: &Kept) -> &Record {
        &self.records[kept.last]
    }
}

impl MemoryJournal {
    /// How many intents a log made with [`MemoryJournal::new`] keeps at most, but for those in doubt:
    /// 100,000.
    pub const DEFAULT_MAX_INTENTS: usize = 100_000;

    /// An empty log.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// An empty log that keeps at most `max_intents` intents (at least 4), but for those in doubt.
    pub fn with_max_intents(max_intents: usize) -> MemoryJournal {
        MemoryJournal { state: Mutex::default(), max_intents: max_intents.max(4) }
    }

    /// A log holding these records, as if appended in this order (a log read back from elsewhere).
    pub fn from_records(records: impl IntoIterator<Item = Record>) -> MemoryJournal {
        let mut state = Plain::default();
        for record in records {
            state.store(record);
        }
        MemoryJournal { state: Mutex::new(state), max_intents: MemoryJournal::DEFAULT_MAX_INTENTS }
    }

    /// The number of intents it holds.
    pub fn intents(&self) -> usize {
        self.lock().index.len()
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<Record> {
        self.lock().records.clone()
    }

    /// What the log holds on one intent, at once: [`Journal::recall`] without the wait.
    pub fn recall_now(&self, key: &IntentKey) -> Option<Recall> {
        let state = self.lock();
        state.index.get(key).map(|&kept| state.recall(kept))
    }

    /// Every unresolved intent, oldest first, at once: [`Journal::unresolved`] without the wait.
    pub fn unresolved_now(&self) -> Vec<Recall> {
        let state = self.lock();
        let open = state.index.values().filter(|kept| {
            let last = state.last(kept);
            in_doubt(last.phase, last.outcome, last.effect_applied)
        });
        sort_queue(open.map(|&kept| state.recall(kept)).collect())
    }

    /// Keep `record`, then hold to the bound.
    fn keep(&self, state: &mut Plain, record: Record) {
        state.store(record);
        self.bound(state);
    }

    /// Forget the intents resolved longest ago when there are more than the bound, down to three
    /// quarters of it, keeping every intent in doubt or claimed. Only when a quarter of the bound can
    /// go at once, so the rebuild (linear in the records kept) is paid once per that many new intents.
    fn bound(&self, state: &mut Plain) {
        if state.index.len() <= self.max_intents {
            return;
        }
        let settled = (state.index.iter())
            .filter(|(key, kept)| {
                let last = state.last(kept);
                !in_doubt(last.phase, last.outcome, last.effect_applied) && !state.leases.is_held(key)
            })
            .map(|(key, kept)| (kept.last, *key));
        let Some(gone) = to_forget(settled.collect(), state.index.len(), self.max_intents) else { return };
        let records = std::mem::take(&mut state.records);
        state.index.clear();
        for record in records.into_iter().filter(|r| !gone.contains(&r.intent_key)) {
            state.store(record);
        }
    }

    /// Store a record about an attempt of `owner`'s claimed intent, if the fence lets it.
    fn fenced(&self, owner: &Owner, record: RecordRef<'_>) -> Answer<'_, Result<(), JournalError>> {
        let mut state = self.lock();
        let highest = state.index.get(&record.intent_key).map_or(0, |kept| kept.attempts);
        if let Err(why) = state.leases.fence(owner, &record, highest) {
            let attempt_id = record.attempt_id.to_owned();
            return Answer::now(Err(JournalError::Conflict { log: "memory".to_owned(), attempt_id, why }));
        }
        self.keep(&mut state, record.to_record());
        Answer::now(Ok(()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Plain> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Journal for MemoryJournal {
    fn approvals(&self) -> Option<&dyn Approvals> {
        Some(self)
    }

    fn mcp_tasks(&self) -> Option<&dyn McpTasks> {
        Some(self)
    }

    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let mut state = self.lock();
        let Plain { records, index, leases, .. } = &mut *state;
        let claimed = leases.claim(*key, owner, lease, || {
            index.get(key).map(|kept| Recall { attempts: kept.attempts, last: records[kept.last].clone() })
        });
        Answer::now(Ok(claimed))
    }

    fn release(&self, key: &IntentKey, owner: &Owner) {
        self.lock().leases.release(key, owner);
    }

    fn start(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.fenced(owner, record)
    }

    fn end(
        &self,
        owner: &Owner,
        record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.fenced(owner, record)
    }

    fn append(&self, record: RecordRef<'_>, _durability: Durability) -> Answer<'_, Result<(), JournalError>> {
        let mut state = self.lock();
        self.keep(&mut state, record.to_record());
        Answer::now(Ok(()))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        Answer::now(Ok(MemoryJournal::recall_now(self, key)))
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Answer::now(Ok(MemoryJournal::unresolved_now(self)))
    }
}

impl McpTasks for MemoryJournal {
    fn mcp_task_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Record>, JournalError>> {
        Answer::now(Ok(self.lock().tasks.of(key)))
    }
}

impl Approvals for MemoryJournal {
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>> {
        Answer::now(Ok(self.lock().approvals.last(key).cloned()))
    }

    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>> {
        let mut state = self.lock();
        if record.phase != super::Phase::Approval || !state.approvals.may_take(&record) {
            return Answer::now(Ok(false));
        }
        self.keep(&mut state, record.to_record());
        Answer::now(Ok(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Phase;
    use crate::report::Outcome;

    fn key(name: &str) -> IntentKey {
        crate::key::Intent::new("t", "agent", "post", name).key()
    }

    fn record(name: &str, phase: Phase, attempt: u32, outcome: Option<Outcome>) -> Record {
        Record {
            phase,
            task: "t".to_owned(),
            call: "post_notice".to_owned(),
            intent_key: key(name),
            attempt,
            attempt_id: format!("t-{attempt}"),
            started: "2026-12-01T00:00:00Z".to_owned(),
            budget_left_s: 30,
            outcome,
            effect_applied: None,
            probe: None,
            message: outcome.map(|o| o.as_str().to_owned()),
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        }
    }

    /// The plain store and the compact one, given the same records in the same order, give the same
    /// records back, the same last word of every intent and the same escalation queue.
    #[test]
    fn the_compact_store_answers_as_the_plain_one() {
        let mut records = Vec::new();
        for n in 0..40u32 {
            let name = format!("i{}", n % 13);
            let phase = if n % 3 == 0 { Phase::Start } else { Phase::End };
            let outcome = match (phase, n % 4) {
                (Phase::Start, _) => None,
                (_, 0) => Some(Outcome::Ok),
                (_, 1) => Some(Outcome::Unknown),
                (_, 2) => Some(Outcome::Retryable),
                _ => Some(Outcome::Permanent),
            };
            let mut record = record(&name, phase, 1 + n / 13, outcome);
            if n % 5 == 0 {
                record.value = Some(serde_json::json!({ "n": n }));
                record.retry_at = Some("2026-12-01T00:00:09Z".to_owned());
            }
            records.push(record);
        }
        let plain = MemoryJournal::from_records(records.clone());
        let compact = CompactMemoryJournal::from_records(records.clone());
        assert_eq!(plain.records(), records);
        assert_eq!(compact.records(), plain.records());
        assert_eq!(compact.unresolved_now(), plain.unresolved_now());
        for n in 0..13 {
            let key = key(&format!("i{n}"));
            assert_eq!(compact.recall_now(&key), plain.recall_now(&key), "i{n}");
        }
    }

    /// Past its bound the plain store forgets the intents resolved longest ago, never one in doubt.
    #[test]
    fn past_its_bound_it_forgets_the_oldest_resolved_intents_first() {
        let log = MemoryJournal::with_max_intents(8);
        let append = |r: Record| log.append(r.as_record_ref(), Durability::Buffered).ready();
        append(record("open", Phase::Start, 1, None));
        for n in 0..12 {
            append(record(&format!("done-{n}"), Phase::End, 1, Some(Outcome::Ok)));
        }
        assert!(log.intents() <= 8, "{} intents", log.intents());
        assert!(log.recall_now(&key("open")).is_some(), "an intent in doubt is never forgotten");
        assert!(log.recall_now(&key("done-0")).is_none(), "the oldest resolved went first");
        assert!(log.recall_now(&key("done-11")).is_some(), "the newest stays");
    }
}
