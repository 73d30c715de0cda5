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
    /// The intent keys of the records, each kept once and referred to by its place here.
    keys: Vec<IntentKey>,
    /// Per intent, its highest attempt and where its last word is in `records`: the fold of
    /// [`super::index_record`], kept without a second copy of each record.
    index: HashMap<IntentKey, Kept, KeyHashing>,
    /// Who holds which intent.
    leases: Leases,
}

/// A record as kept, in 48 bytes for the common case: the strings that repeat from record to record
/// and the intent key are kept once, what the engine writes in a known form (its attempt id, its
/// message for an `ok`, a number as the value) is rebuilt on reading rather than kept, the rest waits
/// in `rare`, and an end record appended right after its start record keeps both in one entry.
#[derive(Debug)]
struct Stored {
    /// The intent's place in `MemoryState::keys` (`u32::MAX`: the key is in `rare`).
    intent: u32,
    attempt: u32,
    /// Whole seconds (`u32::MAX`: the budget is in `rare`).
    budget_left_s: u32,
    /// Places in `MemoryState::strings` (`u32::MAX` when the text is in `rare`).
    task: u32,
    call: u32,
    started: u32,
    /// A number value's bits (see `value`).
    value_bits: u64,
    rare: Option<Box<Rare>>,
    phase: Phase,
    /// An end record that also stands for the start record appended just before it: same attempt,
    /// same stamp and budget, and nothing the start carried that the end does not.
    with_start: bool,
    /// The message is the engine's for an `ok`: `{call} done on attempt {attempt}`.
    done_message: bool,
    outcome: Option<Outcome>,
    effect_applied: Option<Applied>,
    probe: Option<ProbeMark>,
    value: ValueKind,
}

/// The parts of a record most records do not have.
#[derive(Debug, Default)]
struct Rare {
    /// `None` for the engine's form, `{task}-{first 8 hex of the key}-a{n}`.
    attempt_id: Option<Box<str>>,
    message: Option<Box<str>>,
    retry_at: Option<Box<str>>,
    /// A value other than `null`, a boolean or a number.
    value: Option<serde_json::Value>,
    /// A budget of `u32::MAX` seconds or more.
    budget_left_s: Option<u64>,
    /// The key of an intent that found no place in `MemoryState::keys` (only once it holds 2^32 - 1).
    intent_key: Option<IntentKey>,
    /// The texts that found no place in `MemoryState::strings` (only once it holds 2^32 - 1 of them).
    texts: [Option<Box<str>>; 3],
}

/// What a record's value is: a number's bits are kept beside it (`Stored::value_bits`), anything
/// that is not a number, a boolean or `null` in `Rare::value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    None,
    Null,
    False,
    True,
    PosInt,
    NegInt,
    Float,
    Other,
}

impl ValueKind {
    /// The kind and the bits of `value`, and the value itself when it is kept whole.
    fn of(value: Option<&serde_json::Value>) -> (ValueKind, u64, Option<serde_json::Value>) {
        use serde_json::Value as Json;
        match value {
            None => (ValueKind::None, 0, None),
            Some(Json::Null) => (ValueKind::Null, 0, None),
            Some(Json::Bool(false)) => (ValueKind::False, 0, None),
            Some(Json::Bool(true)) => (ValueKind::True, 0, None),
            Some(Json::Number(n)) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => (ValueKind::PosInt, u, None),
                (None, Some(i), _) => (ValueKind::NegInt, i as u64, None),
                (None, None, Some(f)) if n.is_f64() => (ValueKind::Float, f.to_bits(), None),
                _ => (ValueKind::Other, 0, value.cloned()),
            },
            Some(other) => (ValueKind::Other, 0, Some(other.clone())),
        }
    }

    /// The value again, from its kind, its bits and what `rare` keeps.
    fn to_json(self, bits: u64, rare: Option<&Rare>) -> Option<serde_json::Value> {
        use serde_json::Value as Json;
        match self {
            ValueKind::None => None,
            ValueKind::Null => Some(Json::Null),
            ValueKind::False => Some(Json::Bool(false)),
            ValueKind::True => Some(Json::Bool(true)),
            ValueKind::PosInt => Some(Json::from(bits)),
            ValueKind::NegInt => Some(Json::from(bits as i64)),
            ValueKind::Float => serde_json::Number::from_f64(f64::from_bits(bits)).map(Json::Number),
            ValueKind::Other => rare.and_then(|rare| rare.value.clone()),
        }
    }
}

/// Whether `message` is the engine's for an `ok` of this call and attempt.
fn is_done_message(message: &str, call: &str, attempt: u32) -> bool {
    strip(message, call)
        .and_then(|rest| strip(rest, " done on attempt "))
        .is_some_and(|n| is_decimal_of(n.as_bytes(), attempt))
}

/// Whether `text` is `n` in decimal as the engine writes it: digits only, no sign, no leading zero.
fn is_decimal_of(text: &[u8], n: u32) -> bool {
    let well_formed = matches!(text, [b'1'..=b'9', ..] | [b'0']) && text.len() <= 10;
    well_formed
        && text.iter().try_fold(0u64, |value, &digit| {
            digit.is_ascii_digit().then(|| value * 10 + u64::from(digit - b'0'))
        }) == Some(u64::from(n))
}

/// The same text: the same place in memory (the engine passes one string to both records of an
/// attempt), or equal bytes.
fn same(a: &str, b: &str) -> bool {
    (std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()) || eq(a.as_bytes(), b.as_bytes())
}

/// Equal bytes, compared here eight at a time: the texts a record repeats are short (a task id, a
/// tool name, a stamp), and a call out to `memcmp` costs more than comparing them.
fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tails = a8.remainder().iter().zip(b8.remainder()).fold(0, |diff, (x, y)| diff | (x ^ y));
    tails == 0
        && a8.zip(b8).all(|(x, y)| {
            let word = |bytes: &[u8]| <[u8; 8]>::try_from(bytes).map(u64::from_ne_bytes).unwrap_or_default();
            word(x) == word(y)
        })
}

/// `text` without `prefix`, as `str::strip_prefix`, compared by [`eq`].
fn strip<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.as_bytes().get(..prefix.len())?;
    if eq(head, prefix.as_bytes()) { text.get(prefix.len()..) } else { None }
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
                None => own_attempt_id(end.attempt_id, end.task, &end.intent_key, end.attempt).is_none(),
                Some(rare) => {
                    rare.message.is_none()
                        && rare.retry_at.is_none()
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
        if attempt_id.is_some() || message.is_some() || record.retry_at.is_some() {
            let rare = kept.get_or_insert_with(Box::default);
            rare.attempt_id = attempt_id.map(Box::from);
            rare.message = message.map(Box::from);
            rare.retry_at = record.retry_at.map(Box::from);
        }
        kept
    }

    fn store(&mut self, record: RecordRef<'_>) {
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
            if !done_message && record.message.is_some() || record.retry_at.is_some() || whole.is_some() {
                let rare = start.rare.get_or_insert_with(Box::default);
                rare.message = if done_message { None } else { record.message.map(Box::from) };
                rare.retry_at = record.retry_at.map(Box::from);
                rare.value = whole;
            }
            self.index(at, record.intent_key, record.attempt);
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
        let intent = self.index(at, record.intent_key, record.attempt);
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

    /// Fold the record at `at` into the intent's index entry, by the rule of [`super::index_record`]:
    /// the intent's place in `keys` (`u32::MAX` once it is full).
    fn index(&mut self, at: usize, key: IntentKey, attempt: u32) -> u32 {
        match self.index.entry(key) {
            Entry::Occupied(kept) => {
                let kept = kept.into_mut();
                if supersedes(attempt, kept.attempts) {
                    kept.last = at;
                }
                kept.attempts = kept.attempts.max(attempt);
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

/// A stored text: `strings`' entry at `at`, or the one `rare` keeps for `slot`.
fn text<'a>(strings: &'a [Box<str>], stored: &'a Stored, slot: usize, at: u32) -> &'a str {
    match stored.rare.as_ref().and_then(|rare| rare.texts[slot].as_deref()) {
        Some(text) => text,
        None => strings.get(at as usize).map_or("", |text| &**text),
    }
}

/// An entry's intent key.
fn key_of(keys: &[IntentKey], stored: &Stored) -> IntentKey {
    match keys.get(stored.intent as usize) {
        Some(key) => *key,
        None => {
            stored.rare.as_ref().and_then(|rare| rare.intent_key).unwrap_or(IntentKey::from_bytes([0; 16]))
        }
    }
}

/// An entry's budget, whole seconds.
fn budget_of(stored: &Stored) -> u64 {
    match stored.budget_left_s {
        u32::MAX => stored.rare.as_ref().and_then(|rare| rare.budget_left_s).unwrap_or(u64::from(u32::MAX)),
        budget => u64::from(budget),
    }
}

/// The record an entry holds (its end, for an entry that stands for a start and its end).
fn to_record(strings: &[Box<str>], keys: &[IntentKey], stored: &Stored) -> Record {
    let task = text(strings, stored, 0, stored.task);
    let call = text(strings, stored, 1, stored.call);
    let rare = stored.rare.as_deref();
    let intent_key = key_of(keys, stored);
    Record {
        phase: stored.phase,
        task: task.to_owned(),
        call: call.to_owned(),
        intent_key,
        attempt: stored.attempt,
        attempt_id: match rare.and_then(|rare| rare.attempt_id.as_deref()) {
            Some(id) => id.to_owned(),
            None => crate::call::attempt_id(task, &intent_key, stored.attempt),
        },
        started: text(strings, stored, 2, stored.started).to_owned(),
        budget_left_s: budget_of(stored),
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
        value: stored.value.to_json(stored.value_bits, rare),
    }
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    attempts: u32,
    last: usize,
    /// The intent's place in `MemoryState::keys`.
    id: u32,
}

/// `id` when it is not the engine's form for this attempt (`None` when it is: it is rebuilt on read).
fn own_attempt_id<'a>(id: &'a str, task: &str, key: &IntentKey, attempt: u32) -> Option<&'a str> {
    let engine_form = || -> Option<()> {
        let rest = strip(id, task)?.strip_prefix('-')?;
        let (hex, n) = (rest.get(..8)?, strip(rest.get(8..)?, "-a")?);
        // The first 8 hex digits of the key, digit by digit.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let key = key.as_bytes();
        let digit = |i: usize| {
            DIGITS[usize::from(if i.is_multiple_of(2) { key[i / 2] >> 4 } else { key[i / 2] & 0xf })]
        };
        let same_key = hex.bytes().enumerate().all(|(i, c)| c == digit(i));
        // The attempt's decimal digits, as the engine writes them (no sign, no leading zero).
        (same_key && is_decimal_of(n.as_bytes(), attempt)).then_some(())
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
                "budgets of 2^32 - 1 seconds and more",
                vec![
                    Record { budget_left_s: u64::from(u32::MAX), ..start("a", 1) },
                    Record { budget_left_s: u64::from(u32::MAX), ..end("a", 1) },
                    Record { budget_left_s: u64::MAX, ..start("a", 2) },
                    Record { budget_left_s: u64::from(u32::MAX) - 1, ..end("a", 2) },
                ],
            ),
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
            serde_json::json!(1.0),
            serde_json::json!(-0.0),
            serde_json::json!(1e300),
            serde_json::json!(u64::MAX),
            serde_json::json!(i64::MIN),
            serde_json::json!(false),
            serde_json::json!([]),
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
        assert!(std::mem::size_of::<Stored>() <= 48, "{}", std::mem::size_of::<Stored>());
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

    #[test]
    fn an_attempt_number_is_recognised_only_in_the_engines_form() {
        for (text, n, is) in [
            ("1", 1, true),
            ("4294967295", u32::MAX, true),
            ("0", 0, true),
            ("01", 1, false),
            ("00", 0, false),
            ("", 0, false),
            ("+1", 1, false),
            ("1a", 1, false),
            ("42949672950", 0, false),
            ("12", 21, false),
        ] {
            assert_eq!(is_decimal_of(text.as_bytes(), n), is, "{text:?} for {n}");
        }
        for (a, b, is) in [("", "", true), ("ord-7741", "ord-7741", true), ("ord-7741x", "ord-7741y", false)]
        {
            assert_eq!(eq(a.as_bytes(), b.as_bytes()), is, "{a:?} {b:?}");
            assert_eq!(strip(a, b).is_some(), is || b.is_empty(), "{a:?} {b:?}");
        }
        assert_eq!(strip("2026-12-01T03:00:00Z done", "2026-12-01T03:00:00Z"), Some(" done"));
        assert_eq!(strip("2026-12-01T03:00:00Z", "2026-12-01T03:00:01Z"), None);
    }
}
