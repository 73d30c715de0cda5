//! How the in-memory log keeps a record: an entry of 48 bytes for the common case, and the texts,
//! numbers and forms of the engine's records it rebuilds on reading rather than keeps.

use crate::journal::{Phase, Record};
use crate::key::IntentKey;
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome};

/// A record as kept, in 48 bytes for the common case: the strings that repeat from record to record
/// and the intent key are kept once, what the engine writes in a known form (its attempt id, its
/// message for an `ok`, a number as the value) is rebuilt on reading rather than kept, the rest waits
/// in `rare`, and an end record appended right after its start record keeps both in one entry.
#[derive(Debug)]
pub(super) struct Stored {
    /// The intent's place in `MemoryState::keys` (`u32::MAX`: the key is in `rare`).
    pub(super) intent: u32,
    pub(super) attempt: u32,
    /// Whole seconds (`u32::MAX`: the budget is in `rare`).
    pub(super) budget_left_s: u32,
    /// Places in `MemoryState::strings` (`u32::MAX` when the text is in `rare`).
    pub(super) task: u32,
    pub(super) call: u32,
    pub(super) started: u32,
    /// A number value's bits (see `value`).
    pub(super) value_bits: u64,
    pub(super) rare: Option<Box<Rare>>,
    pub(super) phase: Phase,
    /// An end record that also stands for the start record appended just before it: same attempt,
    /// same stamp and budget, and nothing the start carried that the end does not.
    pub(super) with_start: bool,
    /// The message is the engine's for an `ok`: `{call} done on attempt {attempt}`.
    pub(super) done_message: bool,
    pub(super) outcome: Option<Outcome>,
    pub(super) effect_applied: Option<Applied>,
    pub(super) probe: Option<ProbeMark>,
    pub(super) value: ValueKind,
}

/// The parts of a record most records do not have.
#[derive(Debug, Default)]
pub(super) struct Rare {
    /// `None` for the engine's form, `{task}-{first 8 hex of the key}-a{n}`.
    pub(super) attempt_id: Option<Box<str>>,
    pub(super) message: Option<Box<str>>,
    pub(super) retry_at: Option<Box<str>>,
    pub(super) sent_by: Option<Box<str>>,
    pub(super) args: Option<Box<str>>,
    /// A value other than `null`, a boolean or a number.
    pub(super) value: Option<serde_json::Value>,
    /// A settlement's account.
    pub(super) settled: Option<Box<crate::journal::Settlement>>,
    /// An approval record's account.
    pub(super) approval: Option<Box<crate::journal::ApprovalNote>>,
    /// A budget of `u32::MAX` seconds or more.
    pub(super) budget_left_s: Option<u64>,
    /// The key of an intent that found no place in `MemoryState::keys` (only once it holds 2^32 - 1).
    pub(super) intent_key: Option<IntentKey>,
    /// The texts that found no place in `MemoryState::strings` (only once it holds 2^32 - 1 of them).
    pub(super) texts: [Option<Box<str>>; 3],
}

/// What a record's value is: a number's bits are kept beside it (`Stored::value_bits`), anything
/// that is not a number, a boolean or `null` in `Rare::value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValueKind {
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
    pub(super) fn of(value: Option<&serde_json::Value>) -> (ValueKind, u64, Option<serde_json::Value>) {
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
    pub(super) fn to_json(self, bits: u64, rare: Option<&Rare>) -> Option<serde_json::Value> {
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
pub(super) fn is_done_message(message: &str, call: &str, attempt: u32) -> bool {
    strip(message, call)
        .and_then(|rest| strip(rest, " done on attempt "))
        .is_some_and(|n| is_decimal_of(n.as_bytes(), attempt))
}

/// Whether `text` is `n` in decimal as the engine writes it: digits only, no sign, no leading zero.
pub(super) fn is_decimal_of(text: &[u8], n: u32) -> bool {
    let well_formed = matches!(text, [b'1'..=b'9', ..] | [b'0']) && text.len() <= 10;
    well_formed
        && text.iter().try_fold(0u64, |value, &digit| {
            digit.is_ascii_digit().then(|| value * 10 + u64::from(digit - b'0'))
        }) == Some(u64::from(n))
}

/// The same text: the same place in memory (the engine passes one string to both records of an
/// attempt), or equal bytes.
pub(super) fn same(a: &str, b: &str) -> bool {
    (std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()) || eq(a.as_bytes(), b.as_bytes())
}

/// Equal bytes, compared here eight at a time: the texts a record repeats are short (a task id, a
/// tool name, a stamp), and a call out to `memcmp` costs more than comparing them.
pub(super) fn eq(a: &[u8], b: &[u8]) -> bool {
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
pub(super) fn strip<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.as_bytes().get(..prefix.len())?;
    if eq(head, prefix.as_bytes()) { text.get(prefix.len()..) } else { None }
}

/// A stored text: `strings`' entry at `at`, or the one `rare` keeps for `slot`.
pub(super) fn text<'a>(strings: &'a [Box<str>], stored: &'a Stored, slot: usize, at: u32) -> &'a str {
    match stored.rare.as_ref().and_then(|rare| rare.texts[slot].as_deref()) {
        Some(text) => text,
        None => strings.get(at as usize).map_or("", |text| &**text),
    }
}

/// An entry's intent key.
pub(super) fn key_of(keys: &[IntentKey], stored: &Stored) -> IntentKey {
    match keys.get(stored.intent as usize) {
        Some(key) => *key,
        None => {
            stored.rare.as_ref().and_then(|rare| rare.intent_key).unwrap_or(IntentKey::from_bytes([0; 16]))
        }
    }
}

/// An entry's budget, whole seconds.
pub(super) fn budget_of(stored: &Stored) -> u64 {
    match stored.budget_left_s {
        u32::MAX => stored.rare.as_ref().and_then(|rare| rare.budget_left_s).unwrap_or(u64::from(u32::MAX)),
        budget => u64::from(budget),
    }
}

/// The record an entry holds (its end, for an entry that stands for a start and its end).
pub(super) fn to_record(strings: &[Box<str>], keys: &[IntentKey], stored: &Stored) -> Record {
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
        sent_by: rare.and_then(|rare| rare.sent_by.as_deref()).map(str::to_owned),
        args: rare.and_then(|rare| rare.args.as_deref()).map(str::to_owned),
        value: stored.value.to_json(stored.value_bits, rare),
        settled: rare.and_then(|rare| rare.settled.as_deref()).cloned(),
        approval: rare.and_then(|rare| rare.approval.as_deref()).cloned(),
    }
}

/// `id` when it is not the engine's form for this attempt (`None` when it is: it is rebuilt on read).
pub(super) fn own_attempt_id<'a>(id: &'a str, task: &str, key: &IntentKey, attempt: u32) -> Option<&'a str> {
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
