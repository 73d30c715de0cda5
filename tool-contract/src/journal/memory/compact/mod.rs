//! The compact in-memory attempt log: what [`super::MemoryJournal`] keeps, in a fraction of the memory
//! and time, for a process that opts in.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;

use std::time::Duration;

use crate::journal::leases::Leases;
use crate::journal::{
    Answer, Approvals, Claimed, Durability, Journal, JournalError, McpTasks, Owner, Phase, Recall, Record,
    RecordRef,
};
use crate::key::{IntentKey, KeyHashing};
use crate::rules::{counts_as_attempt, sort_queue, supersedes};

mod stored;
use stored::{
    Rare, Stored, ValueKind, budget_of, eq, is_done_message, key_of, own_attempt_id, same, text, to_record,
};

/// The in-memory attempt log of [`MemoryJournal`](super::MemoryJournal), kept compact: an entry of 48
/// bytes per attempt (a start record and its end as one), the task ids, tool names and timestamps
/// kept once per run of records that repeat them, and the engine's own message and attempt-id forms
/// recognised rather than stored. It answers as `MemoryJournal` does (the store conformance suite and
/// a differential test say so); what it buys is measured in BENCHMARKS.md (row 1). Opt in with
/// `Task::journal(Arc::new(CompactMemoryJournal::new()))`.
///
/// It is bounded: past [`CompactMemoryJournal::DEFAULT_MAX_INTENTS`] intents (or the number given to
/// [`CompactMemoryJournal::with_max_intents`]), the intents resolved longest ago are forgotten, down to three
/// quarters of the bound; an intent in doubt (unfinished, or ended `unknown`) or claimed by a running
/// call is never forgotten, so a store full of them holds more. A forgotten intent called again is a
/// new call (see the attempt log's chapter, "What a log cannot do once it is gone"): a process that
/// must recognise its intents for longer keeps a file log.
#[derive(Debug)]
pub struct CompactMemoryJournal {
    state: Mutex<MemoryState>,
    max_intents: usize,
}

impl Default for CompactMemoryJournal {
    fn default() -> Self {
        CompactMemoryJournal {
            state: Mutex::default(),
            max_intents: CompactMemoryJournal::DEFAULT_MAX_INTENTS,
        }
    }
}

#[derive(Debug, Default)]
struct MemoryState {
    records: Vec<Stored>,
    /// The task ids, tool names and timestamps of the records, each kept once per run of records
    /// that repeat it (a task's calls in a row), and referred to by its place here.
    strings: Vec<Box<str>>,
    /// Where the last task, tool name and timestamp stored are in `strings`.
    last: [Option<u32>; 3],
    /// The intent keys of the records, each kept once and referred to by its place here.
    keys: Vec<IntentKey>,
    /// Per intent, its highest attempt and where its last word is in `records`: the fold of
    /// [`index_record`](crate::journal::index::index_record), kept without a second copy of each record.
    index: HashMap<IntentKey, Kept, KeyHashing>,
    /// Who holds which intent.
    leases: Leases,
    /// Each intent's last approval record.
    approvals: crate::journal::index::Approvals,
    tasks: crate::journal::index::McpTaskRecords,
}

impl MemoryState {
    fn text<'a>(&'a self, stored: &'a Stored, slot: usize, at: u32) -> &'a str {
        text(&self.strings, stored, slot, at)
    }

    fn to_record(&self, stored: &Stored) -> Record {
        to_record(&self.strings, &self.keys, stored)
    }

    /// The records an entry stands for, in the order appended.
    fn push_records(&self, stored: &Stored, out: &mut Vec<Record>) {
        let end = self.to_record(stored);
        if stored.with_start {
            out.push(Record {
                phase: Phase::Start,
                outcome: None,
                effect_applied: None,
                probe: None,
                message: None,
                retry_at: None,
                sent_by: None,
                args: None,
                value: None,
                ..end.clone()
            });
        }
        out.push(end);
    }

    /// Whether `end` completes the start record kept last with nothing of the start lost.
    fn completes_last(&self, end: &RecordRef<'_>) -> bool {
        let Some(start) = self.records.last() else { return false };
        start.phase == Phase::Start
            && end.phase == Phase::End
            && key_of(&self.keys, start) == end.intent_key
            && start.attempt == end.attempt
            && budget_of(start) == end.budget_left_s
            && start.outcome.is_none()
            && start.effect_applied.is_none()
            && start.probe.is_none()
            && !start.done_message
            && start.value == ValueKind::None
            && eq(self.text(start, 2, start.started).as_bytes(), end.started.as_bytes())
            && eq(self.text(start, 0, start.task).as_bytes(), end.task.as_bytes())
            && eq(self.text(start, 1, start.call).as_bytes(), end.call.as_bytes())
            && match start.rare.as_deref() {
                None => {
                    end.args.is_none()
                        && own_attempt_id(end.attempt_id, end.task, &end.intent_key, end.attempt).is_none()
                }
                Some(rare) => {
                    rare.message.is_none()
                        && rare.retry_at.is_none()
                        && rare.sent_by.is_none()
                        && rare.args.as_deref() == end.args
                        && rare.attempt_id.as_deref()
                            == own_attempt_id(end.attempt_id, end.task, &end.intent_key, end.attempt)
                }
            }
    }

    /// `text`'s place in `strings` for `slot` (task, call, stamp): the last one's when it repeats.
    /// `None` once the strings are full (2^32 - 1 of them); the text is then kept in the record.
    fn intern(&mut self, slot: usize, text: &str) -> Option<u32> {
        if let Some(at) = self.last[slot]
            && self.strings.get(at as usize).is_some_and(|kept| eq(kept.as_bytes(), text.as_bytes()))
        {
            return Some(at);
        }
        let at = u32::try_from(self.strings.len()).ok().filter(|&at| at != u32::MAX)?;
        self.strings.push(Box::from(text));
        self.last[slot] = Some(at);
        Some(at)
    }

    /// What the engine's forms do not cover, if anything.
    /// `kept` (what found no place in the entry) with what the engine's forms do not cover, if anything.
    fn rare(record: &RecordRef<'_>, done_message: bool, mut kept: Option<Box<Rare>>) -> Option<Box<Rare>> {
        let attempt_id = own_attempt_id(record.attempt_id, record.task, &record.intent_key, record.attempt);
        let message = if done_message { None } else { record.message };
        if attempt_id.is_some()
            || message.is_some()
            || record.retry_at.is_some()
            || record.sent_by.is_some()
            || record.args.is_some()
            || record.settled.is_some()
            || record.approval.is_some()
        {
            let rare = kept.get_or_insert_with(Box::default);
            rare.attempt_id = attempt_id.map(Box::from);
            rare.message = message.map(Box::from);
            rare.retry_at = record.retry_at.map(Box::from);
            rare.sent_by = record.sent_by.map(Box::from);
            rare.args = record.args.map(Box::from);
            rare.settled = record.settled.cloned().map(Box::new);
            rare.approval = record.approval.cloned().map(Box::new);
        }
        kept
    }

    fn store(&mut self, record: RecordRef<'_>) {
        self.approvals.note(&record);
        self.tasks.note(&record);
        let done_message = record.message.is_some_and(|m| is_done_message(m, record.call, record.attempt));
        // A start record followed by its own end, as most attempts are: one entry for both.
        if self.completes_last(&record) {
            let at = self.records.len() - 1;
            let start = &mut self.records[at];
            start.phase = Phase::End;
            start.with_start = true;
            start.outcome = record.outcome;
            start.effect_applied = record.effect_applied;
            start.probe = record.probe;
            start.done_message = done_message;
            let (kind, bits, whole) = ValueKind::of(record.value);
            (start.value, start.value_bits) = (kind, bits);
            let more = record.retry_at.is_some() || record.sent_by.is_some() || whole.is_some();
            if !done_message && record.message.is_some() || more {
                let rare = start.rare.get_or_insert_with(Box::default);
                rare.message = if done_message { None } else { record.message.map(Box::from) };
                rare.retry_at = record.retry_at.map(Box::from);
                rare.sent_by = record.sent_by.map(Box::from);
                rare.value = whole;
            }
            self.index(at, record.intent_key, record.attempt, record.phase, record.probe);
            return;
        }
        self.push(record, done_message, false);
    }

    /// Keep a start record and the end record that follows it: one entry when the end completes the
    /// start with nothing of the start lost (a read answered without waiting), else two.
    fn store_pair(&mut self, start: RecordRef<'_>, end: RecordRef<'_>) {
        let folds = start.phase == Phase::Start
            && end.phase == Phase::End
            && start.intent_key == end.intent_key
            && start.attempt == end.attempt
            && start.budget_left_s == end.budget_left_s
            && start.outcome.is_none()
            && start.effect_applied.is_none()
            && start.probe.is_none()
            && start.message.is_none()
            && start.retry_at.is_none()
            && start.sent_by.is_none()
            && start.args == end.args
            && start.value.is_none()
            && same(start.started, end.started)
            && same(start.task, end.task)
            && same(start.call, end.call)
            && same(start.attempt_id, end.attempt_id);
        if folds {
            let done_message = end.message.is_some_and(|m| is_done_message(m, end.call, end.attempt));
            self.push(end, done_message, true);
        } else {
            self.store(start);
            self.store(end);
        }
    }

    /// Keep `record` as a new entry (`with_start`: it stands for its start record too).
    fn push(&mut self, record: RecordRef<'_>, done_message: bool, with_start: bool) {
        // What finds no place in the entry; most records have nothing there.
        let mut kept: Option<Box<Rare>> = None;
        let mut place = |state: &mut MemoryState, slot: usize, text: &str| match state.intern(slot, text) {
            Some(at) => at,
            None => {
                kept.get_or_insert_with(Box::default).texts[slot] = Some(Box::from(text));
                u32::MAX
            }
        };
        let task = place(self, 0, record.task);
        let call = place(self, 1, record.call);
        let started = place(self, 2, record.started);
        let at = self.records.len();
        let intent = self.index(at, record.intent_key, record.attempt, record.phase, record.probe);
        if intent == u32::MAX {
            kept.get_or_insert_with(Box::default).intent_key = Some(record.intent_key);
        }
        let budget_left_s = u32::try_from(record.budget_left_s).ok().filter(|&s| s != u32::MAX);
        if budget_left_s.is_none() {
            kept.get_or_insert_with(Box::default).budget_left_s = Some(record.budget_left_s);
        }
        let (value, value_bits, whole) = ValueKind::of(record.value);
        if whole.is_some() {
            kept.get_or_insert_with(Box::default).value = whole;
        }
        let stored = Stored {
            intent,
            attempt: record.attempt,
            budget_left_s: budget_left_s.unwrap_or(u32::MAX),
            task,
            call,
            started,
            value_bits,
            rare: MemoryState::rare(&record, done_message, kept),
            phase: record.phase,
            with_start,
            done_message,
            outcome: record.outcome,
            effect_applied: record.effect_applied,
            probe: record.probe,
            value,
        };
        self.records.push(stored);
    }

    /// Fold the record at `at` into the intent's index entry, by the rule of
    /// [`index_record`](crate::journal::index::index_record): the intent's place in `keys` (`u32::MAX`
    /// once it is full).
    fn index(
        &mut self,
        at: usize,
        key: IntentKey,
        attempt: u32,
        phase: Phase,
        probe: Option<crate::probe::ProbeMark>,
    ) -> u32 {
        match self.index.entry(key) {
            Entry::Occupied(kept) => {
                let kept = kept.into_mut();
                let kept_phase = self.records.get(kept.last).map_or(Phase::Start, |last| last.phase);
                if supersedes(phase, probe, attempt, kept.attempts, kept_phase) {
                    kept.last = at;
                }
                if counts_as_attempt(phase) {
                    kept.attempts = kept.attempts.max(attempt);
                }
                kept.id
            }
            Entry::Vacant(new) => {
                let id = u32::try_from(self.keys.len()).ok().filter(|&id| id != u32::MAX).unwrap_or(u32::MAX);
                if id != u32::MAX {
                    self.keys.push(key);
                }
                new.insert(Kept { attempts: attempt, last: at, id });
                id
            }
        }
    }

    fn recall(&self, kept: Kept) -> Recall {
        Recall { attempts: kept.attempts, last: self.to_record(&self.records[kept.last]) }
    }
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    attempts: u32,
    last: usize,
    /// The intent's place in `MemoryState::keys`.
    id: u32,
}

impl CompactMemoryJournal {
    /// How many intents a log made with [`CompactMemoryJournal::new`] keeps at most, but for those in doubt:
    /// 100,000 (about 20 MB for intents of a few attempts each).
    pub const DEFAULT_MAX_INTENTS: usize = 100_000;

    /// An empty log that keeps at most `max_intents` intents (at least 4), but for those in doubt.
    pub fn with_max_intents(max_intents: usize) -> CompactMemoryJournal {
        CompactMemoryJournal { state: Mutex::default(), max_intents: max_intents.max(4) }
    }

    /// The number of intents it holds.
    pub fn intents(&self) -> usize {
        self.lock().index.len()
    }

    /// Forget the intents resolved longest ago when there are more than the bound, down to three
    /// quarters of it, keeping every intent in doubt. Only when a quarter of the bound can go at once,
    /// so the rebuild (linear in the records kept) is paid once per that many new intents.
    fn bound(&self, state: &mut MemoryState) {
        if state.index.len() <= self.max_intents {
            return;
        }
        // An intent a call holds is running: its records stay, whatever they say so far.
        let settled = (state.index.iter())
            .filter(|(key, kept)| {
                let last = &state.records[kept.last];
                !crate::rules::in_doubt(last.phase, last.outcome, last.effect_applied)
                    && !state.leases.is_held(key)
            })
            .map(|(key, kept)| (kept.last, *key));
        let Some(gone) = super::to_forget(settled.collect(), state.index.len(), self.max_intents) else {
            return;
        };
        let mut records = Vec::new();
        for stored in &state.records {
            if !gone.contains(&key_of(&state.keys, stored)) {
                state.push_records(stored, &mut records);
            }
        }
        let mut fresh = MemoryState { leases: std::mem::take(&mut state.leases), ..MemoryState::default() };
        for record in &records {
            fresh.store(record.as_record_ref());
        }
        *state = fresh;
    }

    /// An empty log.
    pub fn new() -> CompactMemoryJournal {
        CompactMemoryJournal::default()
    }

    /// A log holding these records, as if appended in this order (a log read back from elsewhere).
    pub fn from_records(records: impl IntoIterator<Item = Record>) -> CompactMemoryJournal {
        let mut state = MemoryState::default();
        for record in records {
            state.store(record.as_record_ref());
        }
        CompactMemoryJournal {
            state: Mutex::new(state),
            max_intents: CompactMemoryJournal::DEFAULT_MAX_INTENTS,
        }
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<Record> {
        let state = self.lock();
        let mut records = Vec::with_capacity(state.records.len() * 2);
        for stored in &state.records {
            state.push_records(stored, &mut records);
        }
        records
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
            let last = &state.records[kept.last];
            crate::rules::in_doubt(last.phase, last.outcome, last.effect_applied)
        });
        sort_queue(open.map(|&kept| state.recall(kept)).collect())
    }

    /// Store a record about an attempt of `owner`'s claimed intent, if the fence lets it.
    fn fenced(&self, owner: &Owner, record: RecordRef<'_>) -> Answer<'_, Result<(), JournalError>> {
        let mut state = self.lock();
        let highest = state.index.get(&record.intent_key).map_or(0, |kept| kept.attempts);
        if let Err(why) = state.leases.fence(owner, &record, highest) {
            let attempt_id = record.attempt_id.to_owned();
            return Answer::now(Err(JournalError::Conflict { log: "memory".to_owned(), attempt_id, why }));
        }
        state.store(record);
        self.bound(&mut state);
        Answer::now(Ok(()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Journal for CompactMemoryJournal {
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
        let state = &mut *state;
        let MemoryState { records, strings, keys, index, leases, .. } = &mut *state;
        let claimed = leases.claim(*key, owner, lease, || {
            index.get(key).map(|&kept| Recall {
                attempts: kept.attempts,
                last: to_record(strings, keys, &records[kept.last]),
            })
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
        state.store(record);
        self.bound(&mut state);
        Answer::now(Ok(()))
    }

    fn append_attempt(
        &self,
        start: RecordRef<'_>,
        end: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        let mut state = self.lock();
        state.store_pair(start, end);
        self.bound(&mut state);
        Answer::now(Ok(()))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Result<Option<Recall>, JournalError>> {
        Answer::now(Ok(CompactMemoryJournal::recall_now(self, key)))
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Result<Option<u32>, JournalError>> {
        Answer::now(Ok(self.lock().index.get(key).map(|kept| kept.attempts)))
    }

    fn unresolved(&self) -> Answer<'_, Result<Vec<Recall>, JournalError>> {
        Answer::now(Ok(CompactMemoryJournal::unresolved_now(self)))
    }
}

impl McpTasks for CompactMemoryJournal {
    fn mcp_task_records(&self, key: &IntentKey) -> Answer<'_, Result<Vec<Record>, JournalError>> {
        Answer::now(Ok(self.lock().tasks.of(key)))
    }
}

impl Approvals for CompactMemoryJournal {
    fn approval(&self, key: &IntentKey) -> Answer<'_, Result<Option<Record>, JournalError>> {
        Answer::now(Ok(self.lock().approvals.last(key).cloned()))
    }

    fn approval_step(&self, record: RecordRef<'_>) -> Answer<'_, Result<bool, JournalError>> {
        let mut state = self.lock();
        if record.phase != Phase::Approval || !state.approvals.may_take(&record) {
            return Answer::now(Ok(false));
        }
        state.store(record);
        self.bound(&mut state);
        Answer::now(Ok(true))
    }
}

#[cfg(test)]
mod tests;
