//! The codec: the encoder against serde, and the quick check against the full one.

use super::recovery::{Rng, random_record};
use super::*;

#[test]
fn the_check_accepts_exactly_the_lines_a_record_accepts() {
    let good = line(&record("a", Phase::End, 2, Some(Outcome::Ok)));
    let good = good.trim_end();
    let variants = [
        good.to_owned(),
        good.replace("\"value\":4411", "\"value\":{\"id\":[1,2,{\"x\":null}]}"),
        good.replace(",\"value\":4411", ""),
        good.replace("\"value\":4411", "\"value\":null"),
        good.replace("ended ok", "ended \\\"ok\\\" \\u00e9 ✓"),
        good.replace("\"probe\":null,", ""),
        good.replace("\"probe\":null", "\"probe\":\"not_landed\""),
        good.replace("\"probe\":null", "\"probe\":\"maybe\""),
        good.replace("\"outcome\":\"ok\"", "\"outcome\":\"fine\""),
        good.replace("\"attempt\":2", "\"attempt\":-2"),
        good.replace("\"attempt\":2", "\"attempt\":4294967296"),
        good.replace("\"budget_left_s\":42", "\"budget_left_s\":4.2"),
        good.replace("\"task\":\"ord-7741\",", ""),
        good.replace("\"task\":\"ord-7741\"", "\"task\":7741"),
        good.replace("\"phase\":\"end\"", "\"phase\":\"End\""),
        good.replace("\"call\"", "\"extra\":[true],\"call\""),
        good.replace("\"call\":\"post_notice\"", "\"call\":\"post_notice\",\"call\":\"x\""),
        good.replace(&key("a").to_string(), "not-a-key"),
        good.replace(&key("a").to_string(), &key("a").to_string().to_uppercase()),
        format!("{good} trailing"),
        format!("  {good}  "),
        good[..good.len() - 1].to_owned(),
        "[]".to_owned(),
        "null".to_owned(),
    ];
    let mut accepted = 0;
    for v in &variants {
        let record = serde_json::from_slice::<Record>(v.as_bytes()).is_ok();
        // The fast path accepts nothing the schema refuses.
        assert!(record || quick_check(v.as_bytes()).is_none(), "{v}");
        accepted += usize::from(record);
    }
    assert_eq!(accepted, 9, "the good line, its value, escapes, optional and extra fields, blanks around");
}

/// Records whose strings and values need every kind of care in JSON.
fn awkward_records(rng: &mut Rng) -> Vec<Record> {
    let texts = [
        "plain",
        "",
        "quote \" and backslash \\ and slash /",
        "tab\tnewline\ncarriage\rbell\u{7}nul\u{0}del\u{7f}",
        "é ✓ 𝄞 ünïcödé",
        "\u{1f}\u{20}",
    ];
    let values = [
        None,
        Some(serde_json::json!(null)),
        Some(serde_json::json!(4411)),
        Some(serde_json::json!(-0.5e-7)),
        Some(serde_json::json!(u64::MAX)),
        Some(serde_json::json!("a \"quoted\" ✓ value\n")),
        Some(serde_json::json!({"id": [1, 2, {"x": null, "y": true, "z": [false, [], {}]}], "": "é"})),
    ];
    let mut records = Vec::new();
    for i in 0..400 {
        let mut r = random_record(rng, 7);
        let pick = |rng: &mut Rng| texts[rng.below(texts.len() as u64) as usize].to_owned();
        r.task = pick(rng);
        r.call = pick(rng);
        r.attempt_id = pick(rng);
        r.message = (rng.below(3) > 0).then(|| pick(rng));
        r.retry_at = (rng.below(3) == 0).then(|| pick(rng));
        r.value = values[i % values.len()].clone();
        r.attempt = [0, 1, 9, 10, u32::MAX][rng.below(5) as usize];
        r.budget_left_s = [0, 42, u64::MAX][rng.below(3) as usize];
        r.effect_applied = [None, Some(Applied::Yes), Some(Applied::Partial)][rng.below(3) as usize];
        r.probe = [None, Some(ProbeMark::Landed), Some(ProbeMark::NotLanded), Some(ProbeMark::Failed)]
            [rng.below(4) as usize];
        records.push(r);
    }
    records
}

#[test]
fn the_encoder_writes_the_bytes_serde_writes() {
    for record in awkward_records(&mut Rng(11)) {
        let mut ours = Vec::new();
        encode(&mut ours, record.as_record_ref()).unwrap();
        assert_eq!(String::from_utf8_lossy(&ours), serde_json::to_string(&record).unwrap(), "{record:?}");
    }
}

/// The quick check reads every line it accepts as the full check does, and accepts what this crate
/// writes (bar `\u` escapes, which it leaves to the full check).
#[test]
fn the_quick_check_agrees_with_the_full_check() {
    let full = |line: &[u8]| {
        serde_json::from_slice::<Record>(line)
            .ok()
            .map(|c| (c.intent_key, c.attempt, c.phase, c.probe, open(&c)))
    };
    let mut quick_accepted = 0;
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for record in awkward_records(&mut Rng(5)) {
        let line = serde_json::to_vec(&record).unwrap();
        let expected = Some((record.intent_key, record.attempt, record.phase, record.probe, open(&record)));
        assert_eq!(full(&line), expected);
        if !line.windows(2).any(|w| w == b"\\u") {
            assert_eq!(quick_check(&line), expected, "{}", String::from_utf8_lossy(&line));
        }
        lines.push(line);
    }
    // Every cut and every one-byte change of some of them: whatever the quick check accepts, the full
    // check accepts and reads the same.
    let mut variants = Vec::new();
    for line in lines.iter().step_by(23) {
        for cut in 0..line.len() {
            variants.push(line[..cut].to_vec());
            for byte in [b' ', b'"', b'\\', b',', b'}', b'0', b'9', b'-', b'a', b'e', b'.', 0x1f, 0xc3] {
                let mut changed = line.clone();
                changed[cut] = byte;
                variants.push(changed);
                let mut grown = line.clone();
                grown.insert(cut, byte);
                variants.push(grown);
            }
        }
    }
    for variant in &variants {
        if let Some(quick) = quick_check(variant) {
            quick_accepted += 1;
            assert_eq!(Some(quick), full(variant), "{}", String::from_utf8_lossy(variant));
        }
    }
    assert!(quick_accepted > 100, "{quick_accepted}");
}

/// The word-at-a-time searches find the byte a loop over the bytes finds, wherever the slice starts and
/// whatever surrounds the byte (each byte value that a borrow between bytes could confuse is tried).
#[test]
fn the_word_searches_find_what_a_byte_loop_finds() {
    let bytes = [
        0x00, b'\t', b'\n', 0x0b, 0x1f, b' ', b'!', b'"', b'#', b'[', b'\\', b']', b'a', 0x7f, 0x80, 0xc3,
        0xff,
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for round in 0..20_000 {
        let len = rng.below(40) as usize;
        // Mostly plain text, with one byte of interest now and then, so matches fall at every place.
        let text: Vec<u8> = (0..len)
            .map(|_| if rng.below(8) == 0 { bytes[rng.below(bytes.len() as u64) as usize] } else { b'a' })
            .collect();
        let from = if len == 0 { 0 } else { rng.below(len as u64) as usize };
        let text = &text[from..];
        let newline = text.iter().position(|&b| b == b'\n');
        let stop = text.iter().position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b));
        assert_eq!(find_newline(text), newline, "round {round}: {text:?}");
        assert_eq!(find_string_stop(text), stop, "round {round}: {text:?}");
    }
    for b in 0..=255u8 {
        for at in 0..17 {
            let mut text = vec![b'a'; 17];
            text[at] = b;
            let stop = b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b);
            assert_eq!(find_string_stop(&text), stop.then_some(at), "byte {b:#x} at {at}");
            assert_eq!(find_newline(&text), (b == b'\n').then_some(at), "byte {b:#x} at {at}");
        }
    }
}

/// The table that reads a key's hex digits accepts exactly the 32 lowercase hex digits, each byte value
/// in each place.
#[test]
fn a_key_is_read_from_its_hex_digits_as_from_its_text() {
    let hex = key("a").hex();
    assert_eq!(IntentKey::from_hex(&hex), Some(key("a")));
    assert_eq!(IntentKey::from_hex(&hex[..31]), None);
    assert_eq!(IntentKey::from_hex(&[hex.as_slice(), b"0"].concat()), None);
    for at in 0..32 {
        for b in 0..=255u8 {
            let mut changed = hex;
            changed[at] = b;
            let hex_digit = b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            let read = IntentKey::from_hex(&changed);
            assert_eq!(read.is_some(), hex_digit, "byte {b:#x} at {at}");
            if let Some(read) = read {
                assert_eq!(read.to_string().as_bytes(), changed, "byte {b:#x} at {at}");
            }
        }
    }
}

/// Lines a hand, another program or a crash could leave, each with whether the quick check reads it
/// and whether the full check does. Each is built from a record of intent `t{i}`.
fn tricky_lines() -> Vec<(&'static str, Vec<u8>, bool, bool)> {
    type Change = fn(&str, &str) -> Vec<u8>;
    let changes: [(&str, Change, bool, bool); 36] = [
        ("as written", |l, _| l.into(), true, true),
        ("escapes", |l, _| l.replace("ended ok", r#"a \"b\" \\ \/ \b\f\n\r\t"#).into(), true, true),
        ("a \\u escape", |l, _| l.replace("ended ok", r"caf\u00e9").into(), false, true),
        ("a surrogate pair", |l, _| l.replace("ended ok", r"\ud834\udd1e").into(), false, true),
        ("a lone surrogate", |l, _| l.replace("ended ok", r"\ud834").into(), false, false),
        ("an unknown escape", |l, _| l.replace("ended ok", r"\x41").into(), false, false),
        ("raw UTF-8", |l, _| l.replace("ended ok", "é ✓ 𝄞").into(), true, true),
        ("raw DEL", |l, _| l.replace("ended ok", "a\u{7f}b").into(), true, true),
        ("a raw control byte", |l, _| l.replace("ended ok", "a\u{1}b").into(), false, false),
        ("a byte that is not UTF-8", |l, _| not_utf8(l, "ended ok"), false, false),
        ("a character cut", |l, _| not_utf8(l, "ord-7741"), false, false),
        ("fields reordered", |l, _| reorder(l), false, true),
        ("phase last", |l, _| phase_last(l), false, true),
        (
            "an extra field",
            |l, _| l.replace(r#","call""#, r#","extra":{"a":[1]},"call""#).into(),
            false,
            true,
        ),
        (
            "an extra field at the end",
            |l, _| l.replace(r#"4411}"#, r#"4411,"more":true}"#).into(),
            false,
            true,
        ),
        ("blanks between tokens", |l, _| l.replace(r#""attempt":2"#, r#""attempt" : 2"#).into(), false, true),
        (
            "a duplicate key",
            |l, _| l.replace(r#""attempt":2"#, r#""attempt":2,"attempt":3"#).into(),
            false,
            false,
        ),
        ("a duplicate value", |l, _| l.replace(r#"4411}"#, r#"4411,"value":1}"#).into(), false, false),
        (
            "the largest attempt",
            |l, _| l.replace(r#""attempt":2"#, r#""attempt":4294967295"#).into(),
            true,
            true,
        ),
        (
            "an attempt past u32",
            |l, _| l.replace(r#""attempt":2"#, r#""attempt":4294967296"#).into(),
            false,
            false,
        ),
        ("a negative attempt", |l, _| l.replace(r#""attempt":2"#, r#""attempt":-2"#).into(), false, false),
        ("an attempt of -0", |l, _| l.replace(r#""attempt":2"#, r#""attempt":-0"#).into(), false, false),
        ("a fractional attempt", |l, _| l.replace(r#""attempt":2"#, r#""attempt":2.0"#).into(), false, false),
        (
            "an attempt in exponent form",
            |l, _| l.replace(r#""attempt":2"#, r#""attempt":2e0"#).into(),
            false,
            false,
        ),
        ("a leading zero", |l, _| l.replace(r#""attempt":2"#, r#""attempt":02"#).into(), false, false),
        ("the largest budget", |l, _| l.replace(":42,", ":18446744073709551615,").into(), true, true),
        ("a budget past u64", |l, _| l.replace(":42,", ":18446744073709551616,").into(), false, false),
        ("a key in capitals", |l, k| l.replace(k, &k.to_uppercase()).into(), false, false),
        (
            "a key with an escape",
            |l, k| l.replacen(&k[..1], &format!("\\u00{:x}", k.as_bytes()[0]), 1).into(),
            false,
            true,
        ),
        ("a key too short", |l, k| l.replace(k, &k[1..]).into(), false, false),
        (
            "a value nested deep",
            |l, _| l.replace("4411", &format!("{}{}", "[".repeat(40), "]".repeat(40))).into(),
            false,
            true,
        ),
        (
            "an unknown outcome",
            |l, _| l.replace(r#""outcome":"ok""#, r#""outcome":"Ok""#).into(),
            false,
            false,
        ),
        ("blanks around", |l, _| format!(" {l}\t").into(), false, true),
        ("trailing bytes", |l, _| format!("{l}x").into(), false, false),
        ("cut short", |l, _| l[..l.len() - 1].into(), false, false),
        ("cut inside a string", |l, _| l[..l.find("ended").unwrap_or(0) + 3].into(), false, false),
    ];
    changes
        .iter()
        .enumerate()
        .map(|(i, &(name, change, quick, full))| {
            let target = format!("t{i}");
            let good = line(&record(&target, Phase::End, 2, Some(Outcome::Ok)));
            (name, change(good.trim_end(), &key(&target).to_string()), quick, full)
        })
        .collect()
}

/// The first `text` in `line` with its second byte replaced by one that UTF-8 never holds at the start
/// of a character.
fn not_utf8(line: &str, text: &str) -> Vec<u8> {
    let mut bytes = line.as_bytes().to_vec();
    bytes[line.find(text).unwrap_or(0) + 1] = 0x80;
    bytes
}

/// `task` and `call` swapped.
fn reorder(line: &str) -> Vec<u8> {
    let (task, call) = (r#""task":"ord-7741","#, r#""call":"post_notice","#);
    line.replace(&format!("{task}{call}"), &format!("{call}{task}")).into()
}

/// The `phase` field moved to the end.
fn phase_last(line: &str) -> Vec<u8> {
    line.replace(r#"{"phase":"end","#, "{").replace("4411}", r#"4411,"phase":"end"}"#).into()
}

/// On every tricky line, the quick check reads what the full check reads, or leaves the line to it.
#[test]
fn on_tricky_lines_the_quick_check_reads_as_the_full_check_or_declines() {
    for (name, line, quick, full) in tricky_lines() {
        let read = quick_check(&line);
        let checked = serde_json::from_slice::<Record>(&line)
            .ok()
            .map(|c| (c.intent_key, c.attempt, c.phase, c.probe, open(&c)));
        assert_eq!(read.is_some(), quick, "{name}: {}", String::from_utf8_lossy(&line));
        assert_eq!(checked.is_some(), full, "{name}: {}", String::from_utf8_lossy(&line));
        if read.is_some() {
            assert_eq!(read, checked, "{name}");
        }
    }
}

/// A log of tricky lines opened in chunks of every size: the index and the warnings are those of the
/// records serde reads from it, folded in order.
#[test]
fn a_log_of_tricky_lines_is_indexed_as_serde_reads_it() {
    let dir = Scratch::new("tricky");
    let lines = tricky_lines();
    let mut text = Vec::new();
    for (i, (_, line, _, _)) in lines.iter().enumerate() {
        // Each intent's start record first, so a line that is skipped leaves the intent unfinished.
        text.extend_from_slice(self::line(&record(&format!("t{i}"), Phase::Start, 2, None)).as_bytes());
        text.extend_from_slice(line);
        text.push(b'\n');
    }
    text.extend_from_slice(&lines[0].1[..40]);
    fs::write(dir.log(), [logged("").as_bytes(), &text].concat()).unwrap();
    let read = read_log(dir.log()).unwrap();
    let full = lines.iter().filter(|(_, _, _, full)| *full).count();
    assert_eq!(read.records.len(), lines.len() + full, "serde reads what the full check reads");
    let expected: Vec<u64> = read.warnings.iter().map(|w| w.line).collect();
    let fold = crate::journal::MemoryJournal::from_records(read.records);
    for chunk in [7, 64, 300, 1_000, 4_096, CHUNK] {
        let mut file = File::open(dir.log()).unwrap();
        let (index, _, scan) = index_file(&mut file, HEADER.len() + 1, chunk).unwrap().unwrap();
        let warned: Vec<u64> = scan.warnings.iter().map(|w| w.line).collect();
        assert_eq!(warned, expected, "chunk {chunk}");
        assert!(scan.torn_tail, "chunk {chunk}");
        assert_eq!(index.len(), lines.len(), "chunk {chunk}");
        for (i, (name, _, _, _)) in lines.iter().enumerate() {
            let key = key(&format!("t{i}"));
            let entry = index.get(&key).unwrap_or_else(|| panic!("{name}, chunk {chunk}"));
            assert_eq!(Some(entry.recall(key)), fold.recall_now(&key), "{name}, chunk {chunk}");
        }
    }
}

/// Whether a record leaves its intent in doubt, as the quick check says it.
fn open(record: &Record) -> bool {
    crate::rules::in_doubt(record.phase, record.outcome, record.effect_applied)
}
