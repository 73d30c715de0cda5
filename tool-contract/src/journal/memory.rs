//! The in-memory attempt log, for tests and for processes that accept losing it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;

use std::time::Duration;

use super::leases::Leases;
use super::{
    Answer, Claimed, Durability, Journal, JournalError, Owner, Phase, Recall, Record, RecordRef,
    sort_unresolved, supersedes,
};
use crate::key::{IntentKey, KeyHashing};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};

/// An attempt log held in memory, for tests and for processes that accept losing it.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    records: Vec<Stored>,
    /// The task ids, tool names and timestamps of the records, each kept once per run of records
    /// that repeat it (a task's calls in a row), and referred to by its place here.
    strings: Vec<Box<str>>,
    /// Where the last task, tool name and timestamp stored are in `strings`.
    last: [Option<u32>; 3],
    /// Per intent, its highest attempt and where its last word is in `records`: the fold of
    /// [`super::index_record`], kept without a second copy of each record.
    index: HashMap<IntentKey, Kept, KeyHashing>,
    /// Who holds which intent.
    leases: Leases,
}

/// A record as kept, in 80 bytes for the common case: the strings that repeat from record to record
/// are kept once, what the engine writes in a known form (its attempt id, its message for an `ok`, a
/// number as the value) is rebuilt on reading rather than kept, the rest waits in `rare`, and an end
/// record appended right after its start record keeps both in one entry.
#[derive(Debug)]
struct Stored {
    intent_key: IntentKey,
    budget_left_s: u64,
    attempt: u32,
    /// Places in `MemoryState::strings` (`u32::MAX` when the text is in `rare`).
    task: u32,
    call: u32,
    started: u32,
    phase: Phase,
    /// An end record that also stands for the start record appended just before it: same attempt,
    /// same stamp and budget, and nothing the start carried that the end does not.
    with_start: bool,
    /// The message is the engine's for an `ok`: `{call} done on attempt {attempt}`.
    done_message: bool,
    outcome: Option<Outcome>,
    effect_applied: Option<Applied>,
    probe: Option<ProbeMark>,
    value: Value,
    rare: Option<Box<Rare>>,
}

/// The parts of a record most records do not have.
#[derive(Debug, Default)]
struct Rare {
    /// `None` for the engine's form, `{task}-{first 8 hex of the key}-a{n}`.
    attempt_id: Option<Box<str>>,
    message: Option<Box<str>>,
    retry_at: Option<Box<str>>,
    /// The texts that found no place in `MemoryState::strings` (only once it holds 2^32 - 1 of them).
    texts: [Option<Box<str>>; 3],
}

/// A record's value: a number kept in place, anything else boxed.
#[derive(Debug)]
enum Value {
    None,
    Null,
    Bool(bool),
    Number(serde_json::Number),
    Other(Box<serde_json::Value>),
}

impl Value {
    fn of(value: Option<&serde_json::Value>) -> Value {
        match value {
            None => Value::None,
            Some(serde_json::Value::Null) => Value::Null,
            Some(serde_json::Value::Bool(b)) => Value::Bool(*b),
            Some(serde_json::Value::Number(n)) => Value::Number(n.clone()),
            Some(other) => Value::Other(Box::new(other.clone())),
        }
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        match self {
            Value::None => None,
            Value::Null => Some(serde_json::Value::Null),
            Value::Bool(b) => Some(serde_json::Value::Bool(*b)),
            Value::Number(n) => Some(serde_json::Value::Number(n.clone())),
            Value::Other(value) => Some((**value).clone()),
        }
    }

    fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }
}

/// Whether `message` is the engine's for an `ok` of this call and of the attempt whose decimal digits
/// are `attempt`.
fn is_done_message(message: &str, call: &str, attempt: &[u8]) -> bool {
    let Some(n) = message.strip_prefix(call).and_then(|rest| rest.strip_prefix(" done on attempt ")) else {
        return false;
    };
    n.as_bytes() == attempt
}

/// The same text: the same place in memory (the engine passes one string to both records of an
/// attempt), or equal bytes.
fn same(a: &str, b: &str) -> bool {
    (std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()) || a == b
}

/// `n`'s decimal digits, written at the end of `out`.
fn decimal_of(n: u32, out: &mut [u8; 10]) -> &[u8] {
    let (mut at, mut left) = (out.len(), n);
    loop {
        at -= 1;
        out[at] = b'0' + (left % 10) as u8;
        left /= 10;
        if left == 0 {
            return &out[at..];
        }
    }
}

impl MemoryState {
    fn text<'a>(&'a self, stored: &'a Stored, slot: usize, at: u32) -> &'a str {
        text(&self.strings, stored, slot, at)
    }

    fn to_record(&self, stored: &Stored) -> Record {
        to_record(&self.strings, stored)
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
                value: None,
                ..end.clone()
            });
        }
        out.push(end);
    }

    /// Whether `end` completes the start record kept last with nothing of the start lost.
    fn completes_last(&self, end: &RecordRef<'_>, digits: &[u8]) -> bool {
        let Some(start) = self.records.last() else { return false };
        start.phase == Phase::Start
            && end.phase == Phase::End
            && start.intent_key == end.intent_key
            && start.attempt == end.attempt
            && start.budget_left_s == end.budget_left_s
            && start.outcome.is_none()
            && start.effect_applied.is_none()
            && start.probe.is_none()
            && !start.done_message
            && start.value.is_none()
            && self.text(start, 2, start.started) == end.started
            && self.text(start, 0, start.task) == end.task
            && self.text(start, 1, start.call) == end.call
            && match start.rare.as_deref() {
                None => own_attempt_id(end.attempt_id, end.task, &end.intent_key, digits).is_none(),
                Some(rare) => {
                    rare.message.is_none()
                        && rare.retry_at.is_none()
                        && rare.attempt_id.as_deref()
                            == own_attempt_id(end.attempt_id, end.task, &end.intent_key, digits)
                }
            }
    }

    /// `text`'s place in `strings` for `slot` (task, call, stamp): the last one's when it repeats.
    /// `None` once the strings are full (2^32 - 1 of them); the text is then kept in the record.
    fn intern(&mut self, slot: usize, text: &str) -> Option<u32> {
        if let Some(at) = self.last[slot]
            && self.strings.get(at as usize).is_some_and(|kept| **kept == *text)
        {
            return Some(at);
        }
        let at = u32::try_from(self.strings.len()).ok().filter(|&at| at != u32::MAX)?;
        self.strings.push(Box::from(text));
        self.last[slot] = Some(at);
        Some(at)
    }

    /// What the engine's forms do not cover, if anything.
    fn rare(
        record: &RecordRef<'_>,
        digits: &[u8],
        done_message: bool,
        texts: [Option<Box<str>>; 3],
    ) -> Option<Box<Rare>> {
        let attempt_id = own_attempt_id(record.attempt_id, record.task, &record.intent_key, digits);
        let message = if done_message { None } else { record.message };
        if attempt_id.is_none()
            && message.is_none()
            && record.retry_at.is_none()
            && texts == [None, None, None]
        {
            return None;
        }
        Some(Box::new(Rare {
            attempt_id: attempt_id.map(Box::from),
            message: message.map(Box::from),
            retry_at: record.retry_at.map(Box::from),
            texts,
        }))
    }

    fn store(&mut self, record: RecordRef<'_>) {
        let mut decimal = [0u8; 10];
        let digits = decimal_of(record.attempt, &mut decimal);
        let done_message = record.message.is_some_and(|m| is_done_message(m, record.call, digits));
        // A start record followed by its own end, as most attempts are: one entry for both.
        if self.completes_last(&record, digits) {
            let at = self.records.len() - 1;
            let start = &mut self.records[at];
            start.phase = Phase::End;
            start.with_start = true;
            start.outcome = record.outcome;
            start.effect_applied = record.effect_applied;
            start.probe = record.probe;
            start.done_message = done_message;
            start.value = Value::of(record.value);
            if !done_message && record.message.is_some() || record.retry_at.is_some() {
                let rare = start.rare.get_or_insert_with(Box::default);
                rare.message = if done_message { None } else { record.message.map(Box::from) };
                rare.retry_at = record.retry_at.map(Box::from);
            }
            self.index(at, record.intent_key, record.attempt);
            return;
        }
        self.push(record, digits, done_message, false);
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
            && start.value.is_none()
            && same(start.started, end.started)
            && same(start.task, end.task)
            && same(start.call, end.call)
            && same(start.attempt_id, end.attempt_id);
        if folds {
            let mut decimal = [0u8; 10];
            let digits = decimal_of(end.attempt, &mut decimal);
            let done_message = end.message.is_some_and(|m| is_done_message(m, end.call, digits));
            self.push(end, digits, done_message, true);
        } else {
            self.store(start);
            self.store(end);
        }
    }

    /// Keep `record` as a new entry (`with_start`: it stands for its start record too).
    fn push(&mut self, record: RecordRef<'_>, digits: &[u8], done_message: bool, with_start: bool) {
        let mut texts: [Option<Box<str>>; 3] = Default::default();
        let mut place = |state: &mut MemoryState, slot: usize, text: &str| match state.intern(slot, text) {
            Some(at) => at,
            None => {
                texts[slot] = Some(Box::from(text));
                u32::MAX
            }
        };
        let task = place(self, 0, record.task);
        let call = place(self, 1, record.call);
        let started = place(self, 2, record.started);
        let stored = Stored {
            intent_key: record.intent_key,
            budget_left_s: record.budget_left_s,
            attempt: record.attempt,
            task,
            call,
            started,
            phase: record.phase,
            with_start,
            done_message,
            outcome: record.outcome,
            effect_applied: record.effect_applied,
            probe: record.probe,
            value: Value::of(record.value),
            rare: MemoryState::rare(&record, digits, done_message, texts),
        };
        let at = self.records.len();
        self.records.push(stored);
        self.index(at, record.intent_key, record.attempt);
    }

    /// Fold the record at `at` into the intent's index entry, by the rule of [`super::index_record`].
    fn index(&mut self, at: usize, key: IntentKey, attempt: u32) {
        match self.index.entry(key) {
            Entry::Occupied(kept) => {
                let kept = kept.into_mut();
                if supersedes(attempt, kept.attempts) {
                    kept.last = at;
                }
                kept.attempts = kept.attempts.max(attempt);
            }
            Entry::Vacant(new) => {
                new.insert(Kept { attempts: attempt, last: at });
            }
        }
    }

    fn recall(&self, kept: Kept) -> Recall {
        Recall { attempts: kept.attempts, last: self.to_record(&self.records[kept.last]) }
    }
}

/// A stored text: `strings`' entry at `at`, or the one `rare` keeps for `slot`.
fn text<'a>(strings: &'a [Box<str>], stored: &'a Stored, slot: usize, at: u32) -> &'a str {
    match stored.rare.as_ref().and_then(|rare| rare.texts[slot].as_deref()) {
        Some(text) => text,
        None => strings.get(at as usize).map_or("", |text| &**text),
    }
}

/// The record an entry holds (its end, for an entry that stands for a start and its end).
fn to_record(strings: &[Box<str>], stored: &Stored) -> Record {
    let task = text(strings, stored, 0, stored.task);
    let call = text(strings, stored, 1, stored.call);
    let rare = stored.rare.as_deref();
    Record {
        phase: stored.phase,
        task: task.to_owned(),
        call: call.to_owned(),
        intent_key: stored.intent_key,
        attempt: stored.attempt,
        attempt_id: match rare.and_then(|rare| rare.attempt_id.as_deref()) {
            Some(id) => id.to_owned(),
            None => crate::call::attempt_id(task, &stored.intent_key, stored.attempt),
        },
        started: text(strings, stored, 2, stored.started).to_owned(),
        budget_left_s: stored.budget_left_s,
        outcome: stored.outcome,
        effect_applied: stored.effect_applied,
        probe: stored.probe,
        message: if stored.done_message {
            let mut message = String::with_capacity(call.len() + 28);
            message.push_str(call);
            message.push_str(" done on attempt ");
            crate::text::push_decimal(&mut message, u64::from(stored.attempt));
            Some(message)
        } else {
            rare.and_then(|rare| rare.message.as_deref()).map(str::to_owned)
        },
        retry_at: rare.and_then(|rare| rare.retry_at.as_deref()).map(str::to_owned),
        value: stored.value.to_json(),
    }
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    attempts: u32,
    last: usize,
}

/// `id` when it is not the engine's form for this attempt (`None` when it is: it is rebuilt on read).
/// `attempt` is the attempt number's decimal digits.
fn own_attempt_id<'a>(id: &'a str, task: &str, key: &IntentKey, attempt: &[u8]) -> Option<&'a str> {
    let engine_form = || -> Option<()> {
        let rest = id.strip_prefix(task)?.strip_prefix('-')?;
        let (hex, n) = (rest.get(..8)?, rest.get(8..)?.strip_prefix("-a")?);
        // The first 8 hex digits of the key, digit by digit.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let key = key.as_bytes();
        let digit = |i: usize| {
            DIGITS[usize::from(if i.is_multiple_of(2) { key[i / 2] >> 4 } else { key[i / 2] & 0xf })]
        };
        let same_key = hex.bytes().enumerate().all(|(i, c)| c == digit(i));
        // The attempt's decimal digits, as the engine writes them (no sign, no leading zero).
        (same_key && n.as_bytes() == attempt).then_some(())
    };
    match engine_form() {
        Some(()) => None,
        None => Some(id),
    }
}

impl MemoryJournal {
    /// An empty log.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// A log holding these records, as if appended in this order (a log read back from elsewhere).
    pub fn from_records(records: impl IntoIterator<Item = Record>) -> MemoryJournal {
        let mut state = MemoryState::default();
        for record in records {
            state.store(record.as_record_ref());
        }
        MemoryJournal { state: Mutex::new(state) }
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
    pub fn recall(&self, key: &IntentKey) -> Option<Recall> {
        let state = self.lock();
        state.index.get(key).map(|&kept| state.recall(kept))
    }

    /// Every unresolved intent, oldest first, at once: [`Journal::unresolved`] without the wait.
    pub fn unresolved(&self) -> Vec<Recall> {
        let state = self.lock();
        let open = state.index.values().filter(|kept| {
            let last = &state.records[kept.last];
            super::is_open(last.phase, last.outcome)
        });
        sort_unresolved(open.map(|&kept| state.recall(kept)).collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Journal for MemoryJournal {
    fn claim(
        &self,
        key: &IntentKey,
        owner: &Owner,
        lease: Duration,
    ) -> Answer<'_, Result<Claimed, JournalError>> {
        let mut state = self.lock();
        let state = &mut *state;
        let MemoryState { records, strings, index, leases, .. } = &mut *state;
        let claimed = leases.claim(*key, owner, lease, || {
            index.get(key).map(|&kept| Recall {
                attempts: kept.attempts,
                last: to_record(strings, &records[kept.last]),
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
        let mut state = self.lock();
        let highest = state.index.get(&record.intent_key).map_or(0, |kept| kept.attempts);
        if let Err(why) = state.leases.fence(&record.intent_key, owner, record.attempt, highest) {
            let attempt_id = record.attempt_id.to_owned();
            return Answer::now(Err(JournalError::Conflict { log: "memory".to_owned(), attempt_id, why }));
        }
        state.store(record);
        Answer::now(Ok(()))
    }

    fn append<'a>(
        &'a self,
        record: &'a Record,
        _durability: Durability,
    ) -> Answer<'a, Result<(), JournalError>> {
        self.lock().store(record.as_record_ref());
        Answer::now(Ok(()))
    }

    fn append_ref(
        &self,
        record: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.lock().store(record);
        Answer::now(Ok(()))
    }

    fn append_attempt(
        &self,
        start: RecordRef<'_>,
        end: RecordRef<'_>,
        _durability: Durability,
    ) -> Answer<'_, Result<(), JournalError>> {
        self.lock().store_pair(start, end);
        Answer::now(Ok(()))
    }

    fn recall(&self, key: &IntentKey) -> Answer<'_, Option<Recall>> {
        Answer::now(MemoryJournal::recall(self, key))
    }

    fn attempts(&self, key: &IntentKey) -> Answer<'_, Option<u32>> {
        Answer::now(self.lock().index.get(key).map(|kept| kept.attempts))
    }

    fn unresolved(&self) -> Answer<'_, Vec<Recall>> {
        Answer::now(MemoryJournal::unresolved(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(target: &str) -> IntentKey {
        IntentKey::derive("t-1", "agent", "post_notice", &target, None)
    }

    fn start(target: &str, attempt: u32) -> Record {
        let key = key(target);
        Record {
            phase: Phase::Start,
            task: "t-1".to_owned(),
            call: "post_notice".to_owned(),
            intent_key: key,
            attempt,
            attempt_id: crate::call::attempt_id("t-1", &key, attempt),
            started: "2026-12-01T03:00:00Z".to_owned(),
            budget_left_s: 30,
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            value: None,
        }
    }

    fn end(target: &str, attempt: u32) -> Record {
        Record {
            phase: Phase::End,
            outcome: Some(Outcome::Retryable),
            effect_applied: Some(Applied::No),
            message: Some("503".to_owned()),
            retry_at: Some("2026-12-01T03:00:09Z".to_owned()),
            ..start(target, attempt)
        }
    }

    #[test]
    fn the_records_read_back_are_the_records_appended_whatever_is_folded() {
        let done = |r: Record, message: &str| Record {
            outcome: Some(Outcome::Ok),
            effect_applied: Some(Applied::Yes),
            message: Some(message.to_owned()),
            retry_at: None,
            ..r
        };
        let custom = |mut r: Record, id: &str| {
            r.attempt_id = id.to_owned();
            r
        };
        let cases: Vec<(&str, Vec<Record>)> = vec![
            ("a start and its end", vec![start("a", 1), end("a", 1)]),
            ("two intents interleaved", vec![start("a", 1), start("b", 1), end("a", 1), end("b", 1)]),
            ("an end of another attempt", vec![start("a", 2), end("a", 1)]),
            ("an end alone, then a start alone", vec![end("a", 1), start("a", 2)]),
            (
                "a start carrying items",
                vec![Record { value: Some(serde_json::json!([1])), ..start("a", 1) }, end("a", 1)],
            ),
            ("a start with another budget", vec![start("a", 1), Record { budget_left_s: 29, ..end("a", 1) }]),
            (
                "another stamp",
                vec![start("a", 1), Record { started: "2026-12-01T03:00:01Z".to_owned(), ..end("a", 1) }],
            ),
            ("ids of another form", vec![custom(start("a", 1), "mine-1"), custom(end("a", 1), "mine-1")]),
            ("an id changed", vec![start("a", 1), custom(end("a", 1), "mine-1")]),
            ("empty ids", vec![custom(start("a", 1), ""), custom(end("a", 1), "")]),
            (
                "an id with a leading zero",
                vec![custom(start("a", 1), &start("a", 1).attempt_id.replace("-a1", "-a01"))],
            ),
            ("two ends", vec![start("a", 1), end("a", 1), end("a", 1)]),
            (
                "the engine's message for an ok",
                vec![start("a", 3), done(end("a", 3), "post_notice done on attempt 3")],
            ),
            (
                "a message of that form for another attempt",
                vec![done(end("a", 3), "post_notice done on attempt 4")],
            ),
            (
                "a message of that form with a leading zero",
                vec![done(end("a", 3), "post_notice done on attempt 03")],
            ),
            (
                "a message of that form for another tool",
                vec![done(end("a", 3), "read_price done on attempt 3")],
            ),
            ("a message of that form and more", vec![done(end("a", 3), "post_notice done on attempt 3!")]),
            ("an empty message", vec![done(end("a", 3), "")]),
            (
                "a start with its own id and an end",
                vec![custom(start("a", 1), "mine-1"), done(end("a", 1), "x")],
            ),
        ];
        let values = [
            serde_json::json!(null),
            serde_json::json!(true),
            serde_json::json!(4411),
            serde_json::json!(-7),
            serde_json::json!(0.5),
            serde_json::json!("text"),
            serde_json::json!({ "id": 1, "items": [1, 2] }),
        ];
        let cases = cases.into_iter().chain(values.into_iter().map(|value| {
            let end = Record { value: Some(value), ..done(end("a", 1), "post_notice done on attempt 1") };
            ("a value", vec![start("a", 1), end])
        }));
        for (name, records) in cases {
            let log = MemoryJournal::new();
            for record in &records {
                let _ = Journal::append(&log, record, Durability::Buffered).ready();
            }
            assert_eq!(log.records(), records, "{name}");
            // The same two records handed over together, as the engine hands a read's: the same log.
            if let [first, second] = &records[..] {
                let paired = MemoryJournal::new();
                let answer = paired.append_attempt(
                    first.as_record_ref(),
                    second.as_record_ref(),
                    Durability::Buffered,
                );
                assert!(matches!(answer.ready(), Some(Ok(()))), "{name}");
                assert_eq!(paired.records(), records, "{name}: appended as a pair");
                assert_eq!(
                    paired.lock().records.len(),
                    log.lock().records.len(),
                    "{name}: kept in as many entries as appended one by one"
                );
            }
            let last = records
                .iter()
                .rev()
                .find(|r| r.attempt == records.iter().map(|r| r.attempt).max().unwrap_or(0));
            let recalled = log.recall(&records[0].intent_key).map(|r| r.last);
            if records.iter().all(|r| r.intent_key == records[0].intent_key) {
                assert_eq!(recalled.as_ref(), last, "{name}: the last word");
            }
        }
        // Folded: one entry per attempt of a start and its end.
        let log = MemoryJournal::new();
        for record in [start("a", 1), end("a", 1), start("a", 2), end("a", 2)] {
            let _ = Journal::append(&log, &record, Durability::Buffered).ready();
        }
        assert_eq!(log.lock().records.len(), 2);
        // What a read that succeeds keeps: one entry, nothing boxed beside it.
        assert!(std::mem::size_of::<Stored>() <= 80, "{}", std::mem::size_of::<Stored>());
        let read = MemoryJournal::new();
        let ok = Record {
            outcome: Some(Outcome::Ok),
            effect_applied: Some(Applied::No),
            message: Some("post_notice done on attempt 1".to_owned()),
            retry_at: None,
            value: Some(serde_json::json!(4411)),
            ..end("a", 1)
        };
        for record in [start("a", 1), ok] {
            let _ = Journal::append(&read, &record, Durability::Buffered).ready();
        }
        assert!(read.lock().records.iter().all(|stored| stored.rare.is_none()));
        assert_eq!(log.records().len(), 4);
        assert_eq!(log.recall(&key("a")).map(|r| (r.attempts, r.last)), Some((2, end("a", 2))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_leaves_its_start_and_end_whether_it_waits_or_not() {
        use crate::{Class, EffectKind, Task, ToolSpec, engine};
        use std::sync::Arc;
        const READ: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
        let log = Arc::new(MemoryJournal::new());
        let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
        let key = task.key(&READ, &"sku", None);
        // Answered at once: the start record waited in the engine and both went in together.
        let report =
            engine::run(&task, &READ, key, |_| async { Ok::<u64, Class>(4406) }, crate::NoProbe).await;
        assert_eq!(report.outcome, Outcome::Ok);
        let said = |log: &MemoryJournal| -> Vec<(Phase, u32)> {
            log.records().iter().map(|r| (r.phase, r.attempt)).collect()
        };
        assert_eq!(said(&log), [(Phase::Start, 1), (Phase::End, 1)]);
        // A read that waits: its start record is in the log while it runs, and not twice after.
        let seen = &log;
        let report = engine::run(
            &task,
            &READ,
            key,
            |_| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok::<Vec<(Phase, u32)>, Class>(said(seen))
            },
            crate::NoProbe,
        )
        .await;
        assert_eq!(report.value, Some(vec![(Phase::Start, 1), (Phase::End, 1), (Phase::Start, 2)]));
        assert_eq!(said(&log), [(Phase::Start, 1), (Phase::End, 1), (Phase::Start, 2), (Phase::End, 2)]);
    }
}
