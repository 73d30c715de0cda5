//! The intent key: one identity per intended act, derived from the intent and never from the payload.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// The parts of an intent that name one act in the world.
///
/// `task_id` is the durable identity of the work (the order the user asked for), not the run and not the
/// retry loop; `verb` is what is done (a tool's name by default); `target` names the object acted on;
/// `slot` separates acts that are genuinely repeated inside one task (reminder #1, reminder #2).
///
/// ```
/// use tool_contract::key::Intent;
///
/// let key = Intent::new("ord-7741", "agent:billing", "charge_card", "card-42").key();
/// assert_eq!(key.to_string().len(), 32);
/// // The same intent gives the same key, whatever the payload of the call.
/// assert_eq!(key, Intent::new("ord-7741", "agent:billing", "charge_card", "card-42").key());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intent<'a> {
    /// The durable identity of the work.
    pub task_id: &'a str,
    /// Who acts: the agent or user the task runs for.
    pub actor: &'a str,
    /// What is done; the tool's name unless the tool says otherwise.
    pub verb: &'a str,
    /// The object acted on; empty when the act has no natural target.
    pub target: &'a str,
    /// Separates genuinely repeated acts in one task; `None` hashes as an empty slot.
    pub slot: Option<&'a str>,
}

impl<'a> Intent<'a> {
    /// An intent with no slot.
    pub fn new(task_id: &'a str, actor: &'a str, verb: &'a str, target: &'a str) -> Self {
        Intent { task_id, actor, verb, target, slot: None }
    }

    /// The same intent with a slot, for an act repeated on purpose inside one task.
    pub fn slot(mut self, slot: &'a str) -> Self {
        self.slot = Some(slot);
        self
    }

    /// `hex(sha256("{task_id}|{actor}|{verb}|{target}|{slot}"))[..32]`, or the framed form when a part
    /// holds `|` (see [`IntentKey`]).
    pub fn key(&self) -> IntentKey {
        IntentKey::derive(
            self.task_id,
            self.actor,
            self.verb,
            &self.target,
            self.slot.as_ref().map(|s| s as &dyn fmt::Display),
        )
    }
}

/// The first 128 bits of the intent's SHA-256, shown as 32 lowercase hex characters.
///
/// Any language derives the same key from the same five parts (an absent slot is the empty string), so
/// an agent written in Python can find its intent in this crate's attempt log:
///
/// ```text
/// parts = [task, actor, verb, target, slot]
/// if not any("|" in p for p in parts):
///     data = "|".join(parts)                      # the plain form: exactly four "|"
/// else:
///     data = "|||||" + "".join(f"{len(p.encode())}:{p}" for p in parts)   # lengths in UTF-8 bytes
/// key = hashlib.sha256(data.encode()).hexdigest()[:32]
/// ```
///
/// The plain form alone would let task `t|a` with actor `b` and task `t` with actor `a|b` share a key;
/// the framed form, used only when a part holds `|`, keeps them apart while every intent without a
/// `|` keeps the key it always had.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IntentKey([u8; 16]);

/// A key is written as 32 lowercase hex characters, as its `Serialize` writes it.
impl schemars::JsonSchema for IntentKey {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntentKey".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9a-f]{32}$" })
    }
}

impl IntentKey {
    /// The key of no intent, 32 zeros: what the report of a call refused before its arguments named an
    /// intent carries (arguments that do not decode), so it can never be mistaken for a real call's.
    /// A derived key is this one with odds of one in 2^128.
    pub const NONE: IntentKey = IntentKey([0; 16]);

    /// Derive a key, writing every part straight into the hasher.
    ///
    /// `target` and `slot` take anything that displays, so a tool's typed argument (a thread id, an
    /// order number) becomes part of the key without being formatted into a `String` first.
    ///
    /// When a part holds `|`, the separator, the parts are hashed length-prefixed instead (see
    /// [`IntentKey`]), so two intents that differ only in where a `|` falls never share a key.
    pub fn derive(
        task_id: &str,
        actor: &str,
        verb: &str,
        target: &dyn fmt::Display,
        slot: Option<&dyn fmt::Display>,
    ) -> IntentKey {
        let plain = !(has_pipe(task_id) || has_pipe(actor) || has_pipe(verb));
        if plain {
            let mut hasher = HashWriter { sha: Sha256::new(), pipe: false };
            hasher.sha.update(task_id.as_bytes());
            hasher.sha.update(b"|");
            hasher.sha.update(actor.as_bytes());
            hasher.sha.update(b"|");
            hasher.sha.update(verb.as_bytes());
            hasher.sha.update(b"|");
            // Writing into a hasher cannot fail; a Display impl that errors leaves its partial output
            // hashed, which is still deterministic.
            let _ = fmt::write(&mut hasher, format_args!("{target}"));
            hasher.sha.update(b"|");
            if let Some(slot) = slot {
                let _ = fmt::write(&mut hasher, format_args!("{slot}"));
            }
            if !hasher.pipe {
                return IntentKey::from_digest(hasher.sha);
            }
        }
        let target = target.to_string();
        let slot = slot.map(|slot| slot.to_string()).unwrap_or_default();
        let mut sha = Sha256::new();
        // Five separators and more: no plain input (which has exactly four) is ever framed like this.
        sha.update(b"|||||");
        for part in [task_id, actor, verb, &target, &slot] {
            sha.update(part.len().to_string().as_bytes());
            sha.update(b":");
            sha.update(part.as_bytes());
        }
        IntentKey::from_digest(sha)
    }

    fn from_digest(sha: Sha256) -> IntentKey {
        let digest = sha.finalize();
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        IntentKey(key)
    }

    /// The key of these 16 bytes.
    pub(crate) fn from_bytes(bytes: [u8; 16]) -> IntentKey {
        IntentKey(bytes)
    }

    /// The raw 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parse the 32-character hex form, as printed by `Display` and stored in the attempt log.
    pub fn parse(hex: &str) -> Result<IntentKey, KeyParseError> {
        IntentKey::from_hex(hex.as_bytes()).ok_or(KeyParseError { len: hex.len() })
    }

    /// [`IntentKey::parse`] on bytes: `None` unless they are 32 lowercase hex digits. Every digit is
    /// looked up in a table and checked once at the end, so a log's keys are read without a branch per
    /// digit.
    pub(crate) fn from_hex(hex: &[u8]) -> Option<IntentKey> {
        let hex: &[u8; 32] = hex.try_into().ok()?;
        let (mut key, mut bad) = ([0u8; 16], 0u8);
        for (byte, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
            let (hi, lo) = (NIBBLE[usize::from(pair[0])], NIBBLE[usize::from(pair[1])]);
            bad |= hi | lo;
            *byte = hi << 4 | lo;
        }
        (bad & 0xf0 == 0).then_some(IntentKey(key))
    }

    /// The 32 hex characters, without allocating.
    pub fn hex(&self) -> [u8; 32] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 32];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
        }
        out
    }
}

/// The value of each lowercase hex digit, and `0xff` for every other byte.
const NIBBLE: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// A string that is not a 32-character lowercase hex intent key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an intent key is 32 lowercase hex characters; got {len} characters that do not form one")]
pub struct KeyParseError {
    len: usize,
}

/// The hasher of the attempt logs' indexes by intent key. A key is already the start of a SHA-256, so
/// one keyed multiply of its two halves spreads it; the per-process seed keeps crafted intents from
/// aiming at one bucket. Several times cheaper than the default SipHash on the per-call path.
#[derive(Clone)]
pub(crate) struct KeyHashing {
    seed: (u64, u64),
}

impl Default for KeyHashing {
    fn default() -> Self {
        use std::hash::BuildHasher;
        static SEED: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
        let seed = *SEED.get_or_init(|| {
            let random = std::collections::hash_map::RandomState::new();
            (random.hash_one(0x5eed_u64), random.hash_one(0xfee1_u64))
        });
        KeyHashing { seed }
    }
}

impl std::hash::BuildHasher for KeyHashing {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { seed: self.seed, hash: 0 }
    }
}

/// See [`KeyHashing`]; anything but an [`IntentKey`] falls back to a plain fold of its bytes.
pub(crate) struct KeyHasher {
    seed: (u64, u64),
    hash: u64,
}

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut halves = [0u64; 2];
        for (i, chunk) in bytes.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            halves[i % 2] ^= u64::from_le_bytes(word);
        }
        let (a, b) = (halves[0] ^ self.seed.0 ^ self.hash, halves[1] ^ self.seed.1);
        let wide = u128::from(a).wrapping_mul(u128::from(b));
        self.hash = (wide as u64) ^ ((wide >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

impl std::hash::Hash for IntentKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(&self.0);
    }
}

/// Hashes what a `Display` writes, noting whether it wrote the separator.
struct HashWriter {
    sha: Sha256,
    pipe: bool,
}

impl fmt::Write for HashWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.pipe |= has_pipe(s);
        self.sha.update(s.as_bytes());
        Ok(())
    }
}

fn has_pipe(s: &str) -> bool {
    s.as_bytes().contains(&b'|')
}

impl fmt::Display for IntentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        // The digits are ASCII by construction.
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for IntentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IntentKey({self})")
    }
}

impl Serialize for IntentKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hex = self.hex();
        serializer.serialize_str(std::str::from_utf8(&hex).map_err(serde::ser::Error::custom)?)
    }
}

impl<'de> Deserialize<'de> for IntentKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        IntentKey::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each expected value was computed outside Rust, with Python:
    // hashlib.sha256("<task>|<actor>|<verb>|<target>|<slot>".encode("utf-8")).hexdigest()[:32]
    #[test]
    fn matches_vectors_computed_independently() {
        let cases = [
            (
                Intent::new("ord-7741", "agent:billing", "charge_card", "card-42"),
                "e7196e5fd13c36a04d6b298b6cfad716",
            ),
            (Intent::new("t", "a", "v", "x"), "2a10c976278b0669c8bbcd4ef3603e88"),
            (Intent::new("t", "a", "v", "x").slot("0"), "8472f1266fdc0420ab17bdb28ac58629"),
            (
                Intent::new("tâche-1", "agent", "post_notice", "fil de discussion ünïcödé ✉"),
                "f0cf4ae7e337e5cf6c8673176d2bc076",
            ),
            (Intent::new("", "", "", ""), "45ca31c3315a5978f40438aab46040d7"),
            (
                Intent::new("ord-7741", "agent", "post_notice", "thread-9").slot("reminder-2"),
                "d2435055ab551b06f04cc6bbd6ea9bc3",
            ),
        ];
        for (intent, expected) in cases {
            assert_eq!(intent.key().to_string(), expected, "{intent:?}");
        }
    }

    // Computed with Python from the formula in `IntentKey`'s docs.
    #[test]
    fn a_separator_inside_a_part_never_joins_two_intents() {
        let cases = [
            (Intent::new("t|a", "b", "v", "x"), "938e2e95e9df65253c7f1479ecc97fb8"),
            (Intent::new("t", "a|b", "v", "x"), "55552ecc8183eff6516e40e638d98d91"),
            (Intent::new("t", "a", "v", "x|y"), "d70c82873301644b829fa3198839064d"),
            (Intent::new("t", "a", "v", "x").slot("|y"), "9175332a8984812a4c9f2a64439de9a4"),
            (Intent::new("t", "a", "v", "x|").slot("y"), "9367df5ce4a921817e31284f2589196c"),
            (
                Intent::new("ord-7741", "agent", "post_notice", "thread|9").slot("reminder-2"),
                "1a65b3f87ddccd93a77e8d5194620055",
            ),
        ];
        for (intent, expected) in cases {
            assert_eq!(intent.key().to_string(), expected, "{intent:?}");
        }
        let keys: std::collections::HashSet<_> = cases.iter().map(|(intent, _)| intent.key()).collect();
        assert_eq!(keys.len(), cases.len());
        // The pairs that shared a key under the plain form alone.
        assert_ne!(Intent::new("t|a", "b", "v", "x").key(), Intent::new("t", "a|b", "v", "x").key());
        assert_ne!(Intent::new("t", "a", "v", "x|y").key(), Intent::new("t", "a", "v", "x").slot("|y").key());
        // A typed target that writes `|` in pieces is caught too.
        struct Piped;
        impl fmt::Display for Piped {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("x")?;
                f.write_str("|y")
            }
        }
        assert_eq!(IntentKey::derive("t", "a", "v", &Piped, None), Intent::new("t", "a", "v", "x|y").key());
    }

    #[test]
    fn empty_slot_differs_from_slot_zero() {
        let none = Intent::new("t", "a", "v", "x").key();
        assert_ne!(none, Intent::new("t", "a", "v", "x").slot("0").key());
        assert_eq!(none, Intent::new("t", "a", "v", "x").slot("").key());
    }

    #[test]
    fn typed_target_hashes_like_its_display_form() {
        struct ThreadId(u32);
        impl fmt::Display for ThreadId {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "thread-{}", self.0)
            }
        }
        let typed = IntentKey::derive("ord-7741", "agent", "post_notice", &ThreadId(9), Some(&"reminder-2"));
        assert_eq!(typed.to_string(), "d2435055ab551b06f04cc6bbd6ea9bc3");
    }

    #[test]
    fn parses_its_own_display_and_rejects_garbage() {
        let key = Intent::new("t", "a", "v", "x").key();
        assert_eq!(IntentKey::parse(&key.to_string()), Ok(key));
        assert!(IntentKey::parse("2A10C976278B0669C8BBCD4EF3603E88").is_err());
        assert!(IntentKey::parse("2a10").is_err());
        assert!(IntentKey::parse("zz10c976278b0669c8bbcd4ef3603e88").is_err());
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(json, "\"2a10c976278b0669c8bbcd4ef3603e88\"");
        assert_eq!(serde_json::from_str::<IntentKey>(&json).unwrap(), key);
    }
}
