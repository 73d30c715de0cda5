//! Random logs every store and reader is held to the reference on.

use super::*;

/// How many random logs [`all`] feeds a store ([`readers_agree_on_a_random_log`]).
pub const RANDOM_LOGS: u64 = 8;

/// One step of a random log: how a record reaches a store.
#[derive(Debug, Clone)]
pub enum Step {
    /// Claimed by the suite's owner, then fenced: a start, an end, a probe's verdict or a settlement
    /// of the intent's highest attempt.
    Fenced(Record),
    /// Appended unfenced, as a read's records or a late end of an older attempt reach a store.
    Appended(Record),
    /// An approval record (a question, or its answer), through [`Approvals::approval_step`].
    Approval(Record),
    /// A second answer to a question already answered, whatever it says: every store refuses it by
    /// the one rule ([`rules::may_follow`]), and it changes nothing.
    Refused(Record),
}

impl Step {
    /// The record the step writes.
    pub fn record(&self) -> &Record {
        match self {
            Step::Fenced(record)
            | Step::Appended(record)
            | Step::Approval(record)
            | Step::Refused(record) => record,
        }
    }
}

/// A small deterministic generator (xorshift64*), so a failing seed reproduces.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random log of `scope` drawn from `seed`: a dozen intents of two tasks, each with one to three
/// attempts whose records are every phase the engine and people write (starts; ends of every outcome
/// and effect; probes' verdicts; late ends of an older attempt; settlements of a last attempt in
/// doubt; questions before a next attempt, open or past their `until`, answered or not), the intents'
/// steps interleaved. Times repeat, so the queue's order is decided by its ties too. Every step is one
/// a correct store accepts; [`apply`] writes them.
pub fn random_log(scope: &str, seed: u64) -> Vec<Step> {
    let mut draw = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let ends = [
        (Outcome::Ok, Applied::Yes),
        (Outcome::Ok, Applied::No),
        (Outcome::Retryable, Applied::No),
        (Outcome::Retryable, Applied::Unknown),
        (Outcome::Permanent, Applied::No),
        (Outcome::Unknown, Applied::Unknown),
    ];
    let mut lanes: Vec<Vec<Step>> = Vec::new();
    for i in 0..12 {
        let k = key(scope, &format!("random-{i}"));
        let task = if draw.below(2) == 0 { "conformance" } else { "conformance-b" };
        let minute = draw.below(3);
        let at = |attempt: u32| format!("2026-12-01T00:0{minute}:0{}Z", attempt % 10);
        let mut lane = Vec::new();
        let attempts = 1 + draw.below(3) as u32;
        let mut late = None;
        let mut last_open = true;
        for n in 1..=attempts {
            let start = Record { task: task.to_owned(), started: at(n), ..record(k, Phase::Start, n) };
            lane.push(Step::Fenced(start.clone()));
            if let Some(late) = late.take() {
                lane.push(Step::Appended(late));
            }
            let (outcome, applied) = ends[draw.below(ends.len() as u64) as usize];
            let ended =
                Record { task: task.to_owned(), started: at(n), ..end(k, n, outcome, applied, "end") };
            last_open = true;
            match draw.below(5) {
                // Left unfinished (its end, if any, arrives after the next start).
                0 if n < attempts => late = Some(ended),
                0 => {}
                1 => {
                    lane.push(Step::Fenced(ended.clone()));
                    let mark =
                        [ProbeMark::Landed, ProbeMark::NotLanded, ProbeMark::Failed][draw.below(3) as usize];
                    let probed = Record { task: task.to_owned(), started: at(n), ..verdict(k, n, mark) };
                    last_open = rules::in_doubt(probed.phase, probed.outcome, probed.effect_applied);
                    lane.push(Step::Fenced(probed));
                }
                _ => {
                    last_open = rules::in_doubt(ended.phase, ended.outcome, ended.effect_applied);
                    lane.push(Step::Fenced(ended));
                }
            }
        }
        let last = lane.iter().rev().find(|s| s.record().attempt == attempts).map(|s| s.record().clone());
        // A person settles the last attempt in doubt, sometimes.
        if let Some(last) = last.filter(|_| last_open && draw.below(2) == 0) {
            let verdict = if draw.below(2) == 0 { Verdict::Landed } else { Verdict::NotLanded };
            let settled =
                Settle::new(verdict, "alice", "seen").record_for(&last, "2026-12-01T01:00:00Z".into());
            lane.push(Step::Fenced(settled));
        }
        // A question (before the next attempt, or whether the last one landed), open or closed, with an
        // id or as builds before ids wrote it, answered or not; a second answer to it is refused.
        if draw.below(3) == 0 {
            let until = if draw.below(2) == 0 { "2999-01-01T00:00:00Z" } else { "2026-12-01T00:30:00Z" };
            let asks = if draw.below(2) == 0 { Asks::Approval } else { Asks::Settlement };
            let id =
                (draw.below(3) > 0).then(|| format!("q-{}-{:012x}", &k.to_string()[..8], draw.next() >> 16));
            let asked = Record { task: task.to_owned(), ..question(k, attempts) };
            let asked = Record {
                approval: asked.approval.map(|note| ApprovalNote {
                    until: Some(until.to_owned()),
                    question: id.clone(),
                    asks,
                    ..note
                }),
                ..asked
            };
            lane.push(Step::Approval(asked.clone()));
            let steps: &[ApprovalStep] = match asks {
                Asks::Approval => &[ApprovalStep::Approved, ApprovalStep::Denied, ApprovalStep::Declined],
                Asks::Settlement => &[ApprovalStep::Landed, ApprovalStep::NotLanded, ApprovalStep::CantTell],
                other => unreachable!("the random log asks no {other:?}"),
            };
            let answer = |step, by: &str| {
                let mut note = ApprovalNote::new(step, by, "checked", "2026-12-01T00:20:00Z");
                (note.question, note.asks) = (id.clone(), asks);
                Record { approval: Some(note), ..asked.clone() }
            };
            if draw.below(2) == 0 {
                let first = steps[draw.below(steps.len() as u64) as usize];
                lane.push(Step::Approval(answer(first, "bob")));
                if draw.below(2) == 0 {
                    let second = steps[draw.below(steps.len() as u64) as usize];
                    lane.push(Step::Refused(answer(second, "mallory")));
                }
            } else if draw.below(2) == 0 {
                // An answer that names another question answers nothing.
                let mut stray = answer(steps[0], "mallory");
                if let Some(note) = stray.approval.as_mut() {
                    note.question = Some(format!("q-{}-000000000000", &k.to_string()[..8]));
                }
                if id.is_some() {
                    lane.push(Step::Refused(stray));
                }
            }
        }
        lanes.push(lane);
    }
    // Interleave the intents' steps, each intent's in its own order.
    let mut steps = Vec::new();
    let mut at = vec![0usize; lanes.len()];
    while steps.len() < lanes.iter().map(Vec::len).sum() {
        let lane = draw.below(lanes.len() as u64) as usize;
        if let Some(step) = lanes[lane].get(at[lane]) {
            steps.push(step.clone());
            at[lane] += 1;
        }
    }
    steps
}

/// Write `steps` to `store` as [`random_log`] means them, every fenced step under one claim of
/// `owner` per intent (taken once, given up at the end); panics, naming the step, when the store
/// refuses one.
pub async fn apply(store: &dyn Approvals, steps: &[Step], owner: &Owner) {
    const RULE: &str = "a store takes every step of a well-formed log";
    let mut claimed = Vec::new();
    for step in steps {
        let record = step.record();
        let stored = match step {
            Step::Fenced(record) => {
                if !claimed.contains(&record.intent_key) {
                    claim(store, record.intent_key, owner, RULE).await;
                    claimed.push(record.intent_key);
                }
                if record.phase == Phase::Start {
                    store.start(owner, record.as_record_ref(), Durability::Synced).await
                } else {
                    store.end(owner, record.as_record_ref(), Durability::Buffered).await
                }
            }
            Step::Appended(record) => store.append(record.as_record_ref(), Durability::Buffered).await,
            Step::Approval(record) => match store.approval_step(record.as_record_ref()).await {
                Ok(true) => Ok(()),
                Ok(false) => {
                    panic!("{RULE}: approval step {:?} of {} refused", record.approval, record.attempt_id)
                }
                Err(e) => Err(e),
            },
            Step::Refused(record) => match store.approval_step(record.as_record_ref()).await {
                Ok(false) => Ok(()),
                Ok(true) => panic!(
                    "a question is answered once: the store took {:?} of {} after an answer",
                    record.approval, record.attempt_id
                ),
                Err(e) => Err(e),
            },
        };
        stored.unwrap_or_else(|e| panic!("{RULE}: {:?} of {} refused: {e}", record.phase, record.attempt_id));
    }
    for key in &claimed {
        store.release(key, owner);
    }
}

/// Every reader agrees with the reference on a random log ([`random_log`] of `seed`): for every intent,
/// the same last word and highest attempt ([`Journal::recall`]) and the same last approval record
/// ([`Approvals::approval`], so the same question waits, [`rules::waiting_question`]); and the same
/// intents in doubt in the same order ([`Journal::unresolved`], [`rules::queue_order`]).
pub async fn readers_agree_on_a_random_log(store: &dyn Approvals, scope: &str, seed: u64) {
    let rule = format!("readers agree on random log {seed}");
    let steps = random_log(scope, seed);
    let reference = tool_contract::MemoryJournal::new();
    let owner = Owner::new(format!("{scope}-agree"));
    apply(&reference, &steps, &owner).await;
    apply(store, &steps, &owner).await;
    let mut keys: Vec<IntentKey> = steps.iter().map(|s| s.record().intent_key).collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    for key in &keys {
        let ours = store.recall(key).await.expect("the store answers");
        assert_eq!(ours, reference.recall_now(key), "{rule}: recall of {key}");
        let asked = store.approval(key).await.expect("the store answers");
        assert_eq!(
            asked,
            Approvals::approval(&reference, key).await.expect("the reference answers"),
            "{rule}: {key}"
        );
    }
    let ours: Vec<_> = store.unresolved().await.expect("the store answers");
    let ours: Vec<_> = ours.into_iter().filter(|recall| keys.contains(&recall.last.intent_key)).collect();
    let theirs = reference.unresolved_now();
    assert_eq!(ours, theirs, "{rule}: the intents in doubt, in the queue's order");
    let in_doubt = theirs.len();
    assert!(in_doubt < keys.len(), "{rule}: a log where every intent is in doubt checks little");
}
