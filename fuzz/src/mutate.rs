//! The mutation engine: a small deterministic generator and the byte-level edits.

/// The simulation's seeded generator (splitmix64): the same seed replays the same run.
pub use tool_contract_testing::sim::Rng;

/// What the mutator asks of the generator beyond what the simulation does.
pub trait RngExt {
    /// The next 64 random bits.
    fn bits(&mut self) -> u64;
    /// `true` one time in `n`.
    fn one_in(&mut self, n: u64) -> bool;
}

impl RngExt for Rng {
    fn bits(&mut self) -> u64 {
        self.next_u64()
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// Bytes that break parsers: bounds of integer types, separators, quotes, escapes, non-ASCII.
const INTERESTING: &[&[u8]] = &[
    b"0",
    b"-1",
    b"18446744073709551615",
    b"18446744073709551616",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"1e309",
    b"-0",
    b"\"",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"\n",
    b"\r\n",
    b"\0",
    b"\xff\xfe",
    b"\xe2\x80\xae",
    b"\xf0\x9f\x92\xa5",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"|",
    b" ",
    b"null",
    b"true",
];

/// A mutant of `base`: one to four edits, some splicing in `other` or a dictionary token.
pub fn mutate(base: &[u8], other: &[u8], dictionary: &[&[u8]], rng: &mut Rng, max_len: usize) -> Vec<u8> {
    let mut data = base.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(11) {
            0 if !data.is_empty() => {
                let at = rng.below(data.len() as u64) as usize;
                data[at] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let at = rng.below(data.len() as u64) as usize;
                data[at] = rng.bits() as u8;
            }
            2 | 3 => {
                let token = if dictionary.is_empty() || rng.one_in(3) {
                    INTERESTING[rng.below(INTERESTING.len() as u64) as usize]
                } else {
                    dictionary[rng.below(dictionary.len() as u64) as usize]
                };
                let at = rng.below(data.len() as u64 + 1) as usize;
                data.splice(at..at, token.iter().copied());
            }
            4 if !data.is_empty() => {
                let start = rng.below(data.len() as u64) as usize;
                let end = start + rng.below((data.len() - start) as u64 + 1) as usize;
                data.drain(start..end);
            }
            5 if !data.is_empty() => {
                // Repeat a piece: long lines, deep nesting, size bombs.
                let start = rng.below(data.len() as u64) as usize;
                let len = 1 + rng.below((data.len() - start).min(64) as u64) as usize;
                let piece = data[start..start + len].to_vec();
                let most = if rng.one_in(16) { 4096 } else { 16 };
                let times = 1 + rng.below(most) as usize;
                let at = rng.below(data.len() as u64 + 1) as usize;
                let repeated: Vec<u8> = piece.iter().copied().cycle().take(piece.len() * times).collect();
                data.splice(at..at, repeated);
            }
            6 if !other.is_empty() => {
                let start = rng.below(other.len() as u64) as usize;
                let end = start + rng.below((other.len() - start) as u64 + 1) as usize;
                let at = rng.below(data.len() as u64 + 1) as usize;
                data.splice(at..at, other[start..end].iter().copied());
            }
            7 if !data.is_empty() => {
                data.truncate(rng.below(data.len() as u64) as usize);
            }
            8 => {
                let at = rng.below(data.len() as u64 + 1) as usize;
                let bytes: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.bits() as u8).collect();
                data.splice(at..at, bytes);
            }
            9 if !data.is_empty() => {
                // Nudge a digit, so numbers walk across their bounds.
                let at = rng.below(data.len() as u64) as usize;
                if data[at].is_ascii_digit() {
                    data[at] = b'0' + ((data[at] - b'0' + 1 + rng.below(9) as u8) % 10);
                }
            }
            _ => {
                if !data.is_empty() {
                    let a = rng.below(data.len() as u64) as usize;
                    let b = rng.below(data.len() as u64) as usize;
                    data.swap(a, b);
                }
            }
        }
    }
    data.truncate(max_len);
    data
}

/// A JSON value of any shape, from `rng`: what a model (or an attacker) might send as arguments.
pub fn json(rng: &mut Rng, depth: u32) -> serde_json::Value {
    use serde_json::Value;
    let leaf = depth == 0 || rng.one_in(3);
    match rng.below(if leaf { 6 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => match rng.below(4) {
            0 => Value::from(rng.bits() as i64),
            1 => Value::from(rng.bits()),
            2 => serde_json::Number::from_f64(f64::from_bits(rng.bits())).map_or(Value::Null, Value::Number),
            _ => Value::from(rng.below(10) as i64 - 2),
        },
        3 => Value::String(text(rng)),
        4 => Value::String(String::new()),
        5 => Value::String("x".repeat(rng.below(5000) as usize)),
        6 => Value::Array((0..rng.below(5)).map(|_| json(rng, depth - 1)).collect()),
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(5) {
                let key = if rng.one_in(2) {
                    FIELD_NAMES[rng.below(FIELD_NAMES.len() as u64) as usize].to_owned()
                } else {
                    text(rng)
                };
                map.insert(key, json(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// Field names the fuzzed tools and the MCP `_meta` use, so generated objects often hit them.
pub const FIELD_NAMES: &[&str] = &[
    "thread",
    "text",
    "notice",
    "sku",
    "count",
    "tags",
    "filter",
    "rows",
    "id",
    "label",
    "mode",
    "limit",
    "dev.tool-contract/task",
    "dev.tool-contract/actor",
];

fn text(rng: &mut Rng) -> String {
    const PIECES: &[&str] =
        &["a", "é", "|", "\"", "\\", "\u{0}", "\u{202e}", "💥", " ", "\n", "thread-1", "0"];
    (0..rng.below(12)).map(|_| PIECES[rng.below(PIECES.len() as u64) as usize]).collect()
}

/// FNV-1a of `bytes`: names a saved input and folds signatures.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}
