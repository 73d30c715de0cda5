//! Recovery and the codec: reading back what was written, and what a crash or a hand
//! left.

use super::*;

#[tokio::test]
async fn a_torn_last_line_is_skipped_by_number_and_the_next_record_starts_a_new_line() {
    let dir = Scratch::new("torn");
    let first = record("a", Phase::Start, 1, None);
    let torn = line(&record("b", Phase::Start, 1, None));
    let torn = &torn[..torn.len() / 2];
    fs::write(dir.log(), logged(line(&first) + torn)).unwrap();

    let log = FileJournal::open(dir.log()).unwrap();
    assert_eq!(log.warnings().len(), 1);
    assert_eq!(log.warnings()[0].line, 3);
    assert!(log.warnings()[0].message.starts_with("torn last line"), "{}", log.warnings()[0]);
    assert_eq!(log.recall_now(&key("a")).unwrap().last_word(), LastWord::Unfinished);
    assert!(log.recall_now(&key("b")).is_none());
    // Opening changed nothing.
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(line(&first) + torn));

    let next = record("c", Phase::Start, 1, None);
    log.append(next.as_record_ref(), Durability::Synced).await.unwrap();
    drop(log);
    // The torn bytes stay where they were, ended by a newline; the new record is a line of its own.
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(line(&first) + torn + "\n" + &line(&next)));
    let read = read_log(dir.log()).unwrap();
    assert_eq!(read.records, [first, next]);
    assert_eq!(read.warnings.len(), 1);
    assert_eq!(read.warnings[0].line, 3);
    assert!(read.warnings[0].message.starts_with("not a record"), "{}", read.warnings[0]);
}

#[test]
fn a_garbled_line_is_skipped_by_number_and_the_rest_is_used() {
    let dir = Scratch::new("garbled");
    let (a1, a1_end, b1) = (
        record("a", Phase::Start, 1, None),
        record("a", Phase::End, 1, Some(Outcome::Ok)),
        record("b", Phase::Start, 1, None),
    );
    let hand_edit = line(&record("x", Phase::Start, 1, None)).replace("\"attempt\":1", "\"attempt\":one");
    let text = line(&a1) + "\n" + &hand_edit + "not json at all\n" + &line(&a1_end) + &line(&b1);
    fs::write(dir.log(), logged(&text)).unwrap();
    let read = read_log(dir.log()).unwrap();
    assert_eq!(read.records, [a1, a1_end, b1]);
    let lines: Vec<u64> = read.warnings.iter().map(|w| w.line).collect();
    assert_eq!(lines, [4, 5], "the blank line 3 is not a warning: {:?}", read.warnings);
    let log = FileJournal::open(dir.log()).unwrap();
    assert_eq!(log.warnings(), read.warnings);
    assert!(matches!(log.recall_now(&key("a")).unwrap().last_word(), LastWord::Ok(_)));
    drop(log);
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(&text), "nothing is rewritten");
}

#[test]
fn a_file_that_is_not_a_log_is_refused_and_left_untouched() {
    let dir = Scratch::new("notalog");
    let cases: [&[u8]; 5] = [
        b"hello world\n",
        b"{\n  \"name\": \"config\"\n}\n",
        b"{\"name\":\"a\"}\n{\"name\":\"b\"}\n",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        b"task,call\nord-1,post\n",
    ];
    for bytes in cases {
        fs::write(dir.log(), bytes).unwrap();
        let err = FileJournal::open(dir.log()).unwrap_err();
        assert!(matches!(err, JournalError::NotALog { .. }), "{err}");
        assert!(err.to_string().contains("is not an attempt log"), "{err}");
        assert!(!err.to_string().contains('\n'), "one line: {err}");
        assert!(matches!(read_log(dir.log()), Err(JournalError::NotALog { .. })));
        assert!(matches!(FileJournal::compact(dir.log()), Err(JournalError::NotALog { .. })));
        assert_eq!(fs::read(dir.log()).unwrap(), bytes);
    }
}

#[test]
fn an_empty_file_a_torn_header_and_a_torn_first_record_are_logs() {
    let dir = Scratch::new("empty");
    // Empty, or a header a crash cut short at creation: a new log, given its header.
    for fresh in ["", "{", &HEADER[..HEADER.len() / 2], HEADER] {
        fs::write(dir.log(), fresh).unwrap();
        assert!(FileJournal::open(dir.log()).unwrap().warnings().is_empty(), "{fresh}");
        assert_eq!(fs::read_to_string(dir.log()).unwrap(), logged(""), "{fresh}");
    }
    for torn in ["{", "{\"pha", "{\"phase\":\"start\",\"task\":\"ord-"] {
        fs::write(dir.log(), logged(torn)).unwrap();
        let log = FileJournal::open(dir.log()).unwrap();
        assert_eq!(log.warnings().len(), 1, "{torn}");
        assert_eq!(log.warnings()[0].line, 2);
    }
}

#[test]
fn a_file_that_merely_looks_like_a_log_is_refused_untouched() {
    let dir = Scratch::new("looks-like");
    // A binary file with one line that parses as a record: no header, so not a log.
    let mut bytes = b"\x7fELF\x02\x01\x01\0\0\0\n".to_vec();
    bytes.extend(line(&record("a", Phase::Start, 1, None)).as_bytes());
    bytes.extend(b"\0\0\xff\xfe garbage\n");
    fs::write(dir.log(), &bytes).unwrap();
    let err = FileJournal::open(dir.log()).unwrap_err();
    assert!(matches!(err, JournalError::NotALog { .. }), "{err}");
    assert!(err.to_string().contains("does not begin with the attempt-log header"), "{err}");
    assert!(FileJournal::compact(dir.log()).is_err(), "nor rewritten by a compaction");
    assert_eq!(fs::read(dir.log()).unwrap(), bytes, "left untouched");
    // A header of a later format is refused too.
    let newer = r#"{"tool_contract":"attempt-log","format":2}"#.to_owned() + "\n";
    fs::write(dir.log(), &newer).unwrap();
    let err = FileJournal::open(dir.log()).unwrap_err();
    assert!(err.to_string().contains("format 2, newer than the format 1 this version reads"), "{err}");
    assert_eq!(fs::read_to_string(dir.log()).unwrap(), newer);
    let odd = r#"{"tool_contract":"attempt-log","format":"one"}"#.to_owned() + "\n";
    fs::write(dir.log(), &odd).unwrap();
    let err = FileJournal::open(dir.log()).unwrap_err();
    assert!(err.to_string().contains(r#"format is "one", not a whole number"#), "{err}");
}

/// Issue 23, item 7: a header of format 1 with a field this version does not know is a format-1 log
/// (fields beside `format` are information; `format` alone says how to read the lines): opened,
/// appended to, read and compacted like any other.
#[tokio::test]
async fn a_header_with_a_field_this_version_does_not_know_is_read_by_its_format() {
    let dir = Scratch::new("header-extra");
    let header = r#"{"tool_contract":"attempt-log","format":1,"written_by":"tool-contract 0.3"}"#;
    let first = record("a", Phase::Start, 1, None);
    fs::write(dir.log(), format!("{header}\n{}", line(&first))).unwrap();
    let log = FileJournal::open(dir.log()).unwrap();
    assert!(log.warnings().is_empty(), "{:?}", log.warnings());
    assert_eq!(log.recall_now(&first.intent_key).map(|r| r.attempts), Some(1));
    log.append(record("a", Phase::End, 1, Some(Outcome::Ok)).as_record_ref(), Durability::Synced)
        .await
        .unwrap();
    drop(log);
    let read = read_log(dir.log()).unwrap();
    assert_eq!((read.records.len(), read.warnings.len()), (2, 0));
    assert!(fs::read_to_string(dir.log()).unwrap().starts_with(header), "kept as written");
    FileJournal::compact(dir.log()).unwrap();
    assert_eq!(read_log(dir.log()).unwrap().records.len(), 2);
}

#[test]
fn missing_and_unreadable_paths_are_errors_and_reading_creates_nothing() {
    let dir = Scratch::new("missing");
    let err = read_log(dir.log()).unwrap_err();
    assert!(matches!(err, JournalError::Io { .. }), "{err}");
    assert!(err.to_string().starts_with("cannot read "), "{err}");
    assert!(!dir.log().exists());
    assert!(FileJournal::compact(dir.log()).is_err());
    assert!(!dir.log().exists());
    let err = FileJournal::open(&dir.0).unwrap_err();
    assert!(matches!(err, JournalError::Io { .. }), "{err}");
    let err = FileJournal::open(dir.0.join("no-such-dir/attempts.log")).unwrap_err();
    assert!(err.to_string().starts_with("cannot create "), "{err}");
}

/// A log as an earlier process left it: attempts 1 and 2 of one intent, fields in another order,
/// no `value` key, an unknown extra field.
fn older_log(outcome: &str) -> String {
    let key = key("thread-9");
    format!(
        "{{\"task\":\"ord-7741\",\"phase\":\"start\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":1,\"attempt_id\":\"ord-7741-a1\",\"started\":\"2026-11-30T05:12:04Z\",\"budget_left_s\":42,\"outcome\":null,\"effect_applied\":null,\"probe\":null,\"message\":null}}\n\
         {{\"phase\":\"end\",\"task\":\"ord-7741\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":1,\"attempt_id\":\"ord-7741-a1\",\"started\":\"2026-11-30T05:12:04Z\",\"budget_left_s\":42,\"outcome\":\"retryable\",\"effect_applied\":\"no\",\"probe\":null,\"message\":\"503\",\"host\":\"old\"}}\n\
         {{\"phase\":\"start\",\"task\":\"ord-7741\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":2,\"attempt_id\":\"ord-7741-a2\",\"started\":\"2026-11-30T05:12:09Z\",\"budget_left_s\":37,\"outcome\":null,\"effect_applied\":null,\"probe\":null,\"message\":null}}\n\
         {{\"phase\":\"end\",\"task\":\"ord-7741\",\"call\":\"post_notice\",\"intent_key\":\"{key}\",\"attempt\":2,\"attempt_id\":\"ord-7741-a2\",\"started\":\"2026-11-30T05:12:09Z\",\"budget_left_s\":37,\"outcome\":\"{outcome}\",\"effect_applied\":\"unknown\",\"probe\":null,\"message\":\"timed out\"}}\n"
    )
}

#[tokio::test]
async fn attempt_numbers_continue_after_an_older_process() {
    const READ: ToolSpec = ToolSpec::new("post_notice", EffectKind::Read);
    let dir = Scratch::new("older");
    fs::write(dir.log(), logged(older_log("retryable"))).unwrap();
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    assert!(log.warnings().is_empty());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
    let k = task.key(&READ, &"thread-9", None);
    assert_eq!(k, key("thread-9"));
    let report = engine::run(
        &task,
        &READ,
        k,
        |call: crate::call::Call| async move { Ok::<u32, Class>(call.attempt()) },
        crate::probe::NoProbe,
    )
    .await;
    assert_eq!(report.value, Some(3));
    assert!(report.attempt_id.ends_with("-a3"), "{}", report.attempt_id);
    assert_eq!(log.recall_now(&k).unwrap().attempts, 3);
}

#[tokio::test]
async fn an_unknown_left_by_an_older_process_is_probed_before_attempt_3() {
    const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
    let dir = Scratch::new("older-unknown");
    fs::write(dir.log(), logged(older_log("unknown"))).unwrap();
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    assert_eq!(log.unresolved_now().len(), 1);
    let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
    let k = task.key(&POST, &"thread-9", None);
    let probes = AtomicU32::new(0);
    let report = engine::run(
        &task,
        &POST,
        k,
        |call: crate::call::Call| {
            assert_eq!(probes.load(Ordering::SeqCst), 1, "probed first");
            async move { Ok::<u32, Class>(call.attempt()) }
        },
        |_| {
            probes.fetch_add(1, Ordering::SeqCst);
            async { Probe::NotLanded }
        },
    )
    .await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(3)));
    drop(task);
    drop(log);
    let read = read_log(dir.log()).unwrap();
    let tail: Vec<(Phase, u32, Option<ProbeMark>, Option<Outcome>)> =
        read.records[4..].iter().map(|r| (r.phase, r.attempt, r.probe, r.outcome)).collect();
    assert_eq!(
        tail,
        [
            (Phase::End, 2, Some(ProbeMark::NotLanded), Some(Outcome::Retryable)),
            (Phase::Start, 3, None, None),
            (Phase::End, 3, None, Some(Outcome::Ok)),
        ]
    );
}

#[tokio::test]
async fn a_side_effect_starts_only_once_its_start_record_is_synced() {
    const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
    let dir = Scratch::new("ahead");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
    let k = task.key(&POST, &"thread-9", None);
    let (path, seen) = (dir.log(), log.clone());
    let report = engine::run(
        &task,
        &POST,
        k,
        move |call: crate::call::Call| {
            let read = read_log(&path).unwrap();
            assert_eq!(read.records.len(), 1);
            assert_eq!((read.records[0].phase, read.records[0].attempt), (Phase::Start, call.attempt()));
            assert_eq!(seen.stats().syncs, 1, "synced before the call");
            async { Ok::<u32, Class>(7) }
        },
        |_| async { Probe::NotLanded },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Ok);
}

#[tokio::test]
async fn after_a_failed_write_or_sync_no_record_is_accepted_and_no_side_effect_starts() {
    const POST: ToolSpec = ToolSpec::new("post_notice", EffectKind::Send);
    let dir = Scratch::new("failed");
    let log = Arc::new(FileJournal::open(dir.log()).unwrap());
    // What the writer or the syncer does when the operating system reports an error.
    log.shared.lock().fail("a sync failed: Input/output error (os error 5)".to_owned());
    let err =
        log.append(record("a", Phase::Start, 1, None).as_record_ref(), Durability::Synced).await.unwrap_err();
    assert!(matches!(err, JournalError::Failed { .. }), "{err}");
    assert!(err.to_string().contains("no record is accepted after a failed write or sync"), "{err}");
    assert!(log.sync().await.is_err());

    let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).journal(log.clone());
    let k = task.key(&POST, &"thread-9", None);
    let report = engine::run(
        &task,
        &POST,
        k,
        |_: crate::call::Call| async {
            panic!("a side effect must not start unlogged") as Result<u32, Class>
        },
        |_| async { Probe::<u32>::NotLanded },
    )
    .await;
    assert_eq!((report.outcome, report.effect_applied), (Outcome::Retryable, Applied::No));
    drop(task);
    drop(log);
    // No record: at most the header, which the writer may or may not have written before the failure.
    let text = fs::read_to_string(dir.log()).unwrap();
    assert!(text.is_empty() || text == logged(""), "{text}");
}

/// A small deterministic generator (xorshift), so the property tests need no crate.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub(super) fn random_record(rng: &mut Rng, keys: u64) -> Record {
    let outcomes = [None, Some(Outcome::Ok), Some(Outcome::Retryable), Some(Outcome::Unknown)];
    let phase = if rng.below(2) == 0 { Phase::Start } else { Phase::End };
    let mut r = record(&format!("k{}", rng.below(keys)), phase, 1 + rng.below(4) as u32, None);
    if phase == Phase::End {
        r.outcome = outcomes[rng.below(4) as usize];
        r.message = Some(format!("m{} \"quoted\" é", rng.below(1000)));
    }
    r.started = format!("2026-11-30T05:12:{:02}Z", rng.below(60));
    r
}

/// The file's index (two passes, maybe in pieces) says what folding every record in order says.
fn assert_same_index(log: &FileJournal, fold: &crate::journal::MemoryJournal, keys: u64) {
    for k in 0..keys {
        let key = key(&format!("k{k}"));
        assert_eq!(log.recall_now(&key), fold.recall_now(&key), "k{k}");
    }
    assert_eq!(log.unresolved_now(), fold.unresolved_now());
}

#[tokio::test]
async fn the_file_index_matches_the_fold_of_every_record() {
    let dir = Scratch::new("fold");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200 {
        let records: Vec<Record> = (0..rng.below(30)).map(|_| random_record(&mut rng, 3)).collect();
        fs::write(dir.log(), logged(records.iter().map(line).collect::<String>())).unwrap();
        let log = FileJournal::open(dir.log()).unwrap();
        let fold = crate::journal::MemoryJournal::from_records(records);
        assert_same_index(&log, &fold, 3);
        // Appends after opening follow the same rule.
        for _ in 0..rng.below(10) {
            let next = random_record(&mut rng, 3);
            log.append(next.as_record_ref(), Durability::Buffered).await.unwrap();
            fold.append(next.as_record_ref(), Durability::Buffered).await.unwrap();
        }
        assert_same_index(&log, &fold, 3);
    }
}

#[test]
fn a_large_log_read_in_pieces_indexes_and_numbers_lines_as_one() {
    let dir = Scratch::new("pieces");
    let mut rng = Rng(7);
    let mut text = String::new();
    let mut records = Vec::new();
    let mut garbled = Vec::new();
    let mut number = 1u64; // the header
    // Several chunks, each read in pieces.
    while text.len() < 3 * CHUNK.max(2 * PARALLEL_FROM) {
        number += 1;
        if rng.below(997) == 0 {
            text.push_str("{\"phase\":\"start\",\"task\": garbled\n");
            garbled.push(number);
        } else {
            let r = random_record(&mut rng, 5_000);
            text.push_str(&line(&r));
            records.push(r);
        }
    }
    fs::write(dir.log(), logged(&text)).unwrap();
    let log = FileJournal::open(dir.log()).unwrap();
    let lines: Vec<u64> = log.warnings().iter().map(|w| w.line).collect();
    assert!(garbled.len() > 3);
    assert_eq!(lines, garbled);
    assert_eq!(log.stats().records_read, records.len() as u64);
    let read = read_log(dir.log()).unwrap();
    assert_eq!(read.warnings, log.warnings());
    assert_eq!(read.records, records);
    let fold = crate::journal::MemoryJournal::from_records(records);
    assert_same_index(&log, &fold, 5_000);
}

#[test]
fn streamed_in_small_chunks_the_index_warnings_and_line_numbers_are_the_same() {
    let dir = Scratch::new("chunks");
    let mut rng = Rng(11);
    let mut text = String::new();
    let mut records = Vec::new();
    for _ in 0..400 {
        if rng.below(40) == 0 {
            text.push_str("{\"phase\":\"start\",\"task\": garbled\n");
        } else {
            let r = random_record(&mut rng, 30);
            text.push_str(&line(&r));
            records.push(r);
        }
    }
    text.push_str("{\"phase\":\"sta");
    fs::write(dir.log(), logged(&text)).unwrap();
    let whole = FileJournal::open(dir.log()).unwrap();
    let expected: Vec<u64> = whole.warnings().iter().map(|w| w.line).collect();
    let keys: std::collections::HashSet<IntentKey> = records.iter().map(|r| r.intent_key).collect();
    let fold = crate::journal::MemoryJournal::from_records(records);
    assert_same_index(&whole, &fold, 30);
    drop(whole);
    // Chunks far smaller than a line, about one line, and a few lines: the same index, the same warnings.
    for chunk in [7, 300, 1_000, 4_096] {
        let mut file = File::open(dir.log()).unwrap();
        let (index, _, scan) = index_file(&mut file, HEADER.len() + 1, chunk).unwrap().unwrap();
        let lines: Vec<u64> = scan.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, expected, "chunk {chunk}");
        assert!(scan.torn_tail, "chunk {chunk}");
        assert_eq!(index.len(), keys.len(), "chunk {chunk}");
        for (key, entry) in &index {
            assert_eq!(Some(entry.recall(*key)), fold.recall_now(key), "chunk {chunk}");
        }
    }
}

/// One record schema, many readers: for every field of a record, its absence and each wrong type are
/// judged alike by the schema ([`Record`]'s own deserialisation), by [`FileJournal::open`]'s index, by
/// [`read_log`], by the inspector and by [`FileJournal::compact`] (which keeps a line only if it is a
/// record). PostgreSQL's row decoder has the same test in its crate (`tests/store.rs`).
#[test]
fn every_reader_judges_a_mutated_field_as_the_schema_does() {
    let end = Record {
        retry_at: Some("2026-11-30T05:12:30Z".into()),
        sent_by: None,
        args: None,
        value: Some(serde_json::json!({ "id": 7 })),
        ..record("a", Phase::End, 2, Some(Outcome::Retryable))
    };
    let settled = crate::person::Settle::new(crate::journal::Verdict::Landed, "alice", "seen")
        .value(7)
        .record_for(&record("a", Phase::Start, 2, None), "2026-11-30T05:13:00Z".into());
    let approval = Record {
        message: Some("approval of attempt 3 asked of an operator: 503".into()),
        approval: Some(crate::journal::ApprovalNote {
            step: crate::journal::ApprovalStep::Asked,
            by: "an operator".into(),
            why: "503".into(),
            at: "2026-11-30T05:13:00Z".into(),
            until: Some("2026-11-30T05:18:00Z".into()),
            os_user: None,
            question: None,
            asks: Default::default(),
            asked_in: None,
            args: None,
            shows: Default::default(),
        }),
        ..record("a", Phase::Approval, 2, None)
    };
    for good in [end, settled, approval] {
        judge_mutations(good);
    }
}

fn judge_mutations(good: Record) {
    let good: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&serde_json::to_string(&good).unwrap()).unwrap();
    let fields: Vec<String> = good.keys().cloned().collect();
    let wrongs = [
        ("absent", None),
        ("null", Some(serde_json::Value::Null)),
        ("a number", Some(serde_json::json!(-1))),
        ("a string", Some(serde_json::json!("x"))),
        ("a list", Some(serde_json::json!([]))),
        ("a bool", Some(serde_json::json!(true))),
    ];
    let mut judged = 0;
    for field in &fields {
        for (how, wrong) in &wrongs {
            let mut mutated = good.clone();
            match wrong {
                None => {
                    mutated.remove(field);
                }
                Some(value) => {
                    mutated.insert(field.clone(), value.clone());
                }
            }
            let text = serde_json::to_string(&mutated).unwrap();
            let schema = serde_json::from_str::<Record>(&text).is_ok();
            let dir = Scratch::new("schema");
            let other = line(&record("b", Phase::Start, 1, None));
            fs::write(dir.log(), format!("{HEADER}\n{text}\n{other}")).unwrap();
            let opened = FileJournal::open(dir.log()).unwrap();
            let indexed = opened.warnings().is_empty();
            drop(opened);
            let read = read_log(dir.log()).unwrap();
            let listed = read.warnings.is_empty() && read.records.len() == 2;
            // The inspector shows what the log reads: the record, or a warning for its line.
            let mut shown = Vec::new();
            let view = crate::journal::inspect::View { json: true, ..Default::default() };
            crate::journal::inspect::render("log", &read.records, &read.warnings, &view, &mut shown).unwrap();
            let shown: serde_json::Value = serde_json::from_slice(&shown).unwrap();
            let inspected = shown["warnings"].as_array().is_some_and(Vec::is_empty)
                && shown.to_string().contains(&key("a").to_string());
            FileJournal::compact(dir.log()).unwrap();
            let kept = read_log(dir.log()).unwrap().records.iter().any(|r| r.intent_key == key("a"));
            assert_eq!(
                (indexed, listed, inspected, kept),
                (schema, schema, schema, schema),
                "`{field}` {how}: the schema says {schema}; open, read_log, the inspector, compact say \
                 {indexed}, {listed}, {inspected}, {kept}"
            );
            judged += 1;
        }
    }
    assert_eq!(judged, fields.len() * wrongs.len());
}
