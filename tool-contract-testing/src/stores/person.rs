//! A person's word through the store: settlements and approvals.

use super::*;

/// Settlements ([`settle`]): only an intent in doubt is settled; `landed` is its last word with the
/// settled value and it leaves the intents in doubt; no record written about the attempt after it
/// hides it, but a probe's verdict that the effect landed; `not_landed` opens the intent for the next
/// attempt; an intent that ended `ok` or was never recorded is refused, naming its state.
pub async fn settlements_are_kept(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a settlement is kept as the last word of the attempt it settles";
    let worker = Owner::new(format!("{scope}-settle-worker"));
    let landed = key(scope, "settled-landed");
    left_unfinished(store, landed, &worker, RULE).await;
    let found = Settle::new(Verdict::Landed, "alice", "transfer 4411 is on the statement").value(4411);
    let written = settle(store, &landed, 1, &found).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    assert_eq!((written.phase, written.attempt), (Phase::Settled, 1), "{RULE}");
    let (attempts, kept) = last(store, landed).await;
    assert_eq!((attempts, &kept), (1, &written), "{RULE}: the settlement is the last word as written");
    let in_doubt = store.unresolved().await.expect("the store answers");
    assert!(
        !in_doubt.iter().any(|r| r.last.intent_key == landed),
        "{RULE}: a settled intent is not in doubt"
    );
    // The attempt's own end, delivered after the settlement (unfenced, as a read's would be): the
    // settlement stands.
    let late = end(landed, 1, Outcome::Unknown, Applied::Unknown, "late");
    store.append(late.as_record_ref(), Durability::Buffered).await.expect(RULE);
    let recall = store.recall(&landed).await.expect("the store answers").expect("records");
    assert_eq!(recall.last_word(), LastWord::Ok(Some(&serde_json::json!(4411))), "{RULE}: {:?}", recall.last);
    // A second settlement of the same attempt is refused, naming the first.
    match settle(store, &landed, 1, &Settle::new(Verdict::NotLanded, "bob", "not on the statement")).await {
        Err(e @ SettleError::AlreadySettled { .. }) => {
            assert!(e.to_string().contains("by alice"), "{RULE}: {e}");
        }
        other => panic!("{RULE}: a second settlement of one attempt: {other:?}"),
    }

    let open = key(scope, "settled-not-landed");
    claim(store, open, &worker, RULE).await;
    store
        .start(&worker, record(open, Phase::Start, 1).as_record_ref(), Durability::Synced)
        .await
        .expect(RULE);
    let unknown = end(open, 1, Outcome::Unknown, Applied::Unknown, "probe failed");
    store.end(&worker, unknown.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&open, &worker);
    let missing = Settle::new(Verdict::NotLanded, "alice", "no transfer on the statement");
    settle(store, &open, 1, &missing).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    let recall = store.recall(&open).await.expect("the store answers").expect("records");
    assert_eq!(
        (recall.last_word(), recall.last.effect_applied),
        (LastWord::Ended(Outcome::Retryable), Some(Applied::No)),
        "{RULE}: not landed opens the intent"
    );
    // The next attempt is numbered after the highest.
    claim(store, open, &worker, RULE).await;
    store
        .start(&worker, record(open, Phase::Start, 2).as_record_ref(), Durability::Synced)
        .await
        .expect(RULE);
    store.release(&open, &worker);
    assert_eq!(last(store, open).await.0, 2, "{RULE}");

    // A person's `not_landed` given while the request could still land: the next call probes the
    // attempt again. A probe that could not tell leaves the settlement the last word; one that saw the
    // effect land takes its place, and the intent reads `ok` to every reader.
    let seen = key(scope, "settled-then-seen");
    left_unfinished(store, seen, &worker, RULE).await;
    settle(store, &seen, 1, &missing).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    claim(store, seen, &worker, RULE).await;
    store
        .end(&worker, verdict(seen, 1, ProbeMark::Failed).as_record_ref(), Durability::Buffered)
        .await
        .expect(RULE);
    let recall = store.recall(&seen).await.expect("the store answers").expect("records");
    assert_eq!(
        rules::last_word(&recall),
        rules::Word::SettledNotLanded,
        "{RULE}: a probe that could not tell leaves the settlement: {:?}",
        recall.last
    );
    let landed = verdict(seen, 1, ProbeMark::Landed);
    store.end(&worker, landed.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&seen, &worker);
    let recall = store.recall(&seen).await.expect("the store answers").expect("records");
    assert_eq!(
        (rules::last_word(&recall), recall.attempts, &recall.last),
        (rules::Word::Ok, 1, &landed),
        "{RULE}: a probe that saw the effect land takes the place of an earlier not landed"
    );
    let in_doubt = store.unresolved().await.expect("the store answers");
    assert!(!in_doubt.iter().any(|r| r.last.intent_key == seen), "{RULE}: the intent is not in doubt");

    let done = key(scope, "settle-done");
    claim(store, done, &worker, RULE).await;
    store
        .start(&worker, record(done, Phase::Start, 1).as_record_ref(), Durability::Synced)
        .await
        .expect(RULE);
    let ok = end(done, 1, Outcome::Ok, Applied::Yes, "done");
    store.end(&worker, ok.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&done, &worker);
    match settle(store, &done, 1, &found).await {
        Err(e @ SettleError::NotInDoubt { .. }) => assert!(e.to_string().contains("ended ok"), "{RULE}: {e}"),
        other => panic!("{RULE}: an intent that ended ok was settled: {other:?}"),
    }
    let never = key(scope, "settle-never-recorded");
    match settle(store, &never, 1, &found).await {
        Err(SettleError::NotFound { .. }) => {}
        other => panic!("{RULE}: an intent with no record was settled: {other:?}"),
    }
}

/// Two settlers at once on one intent in doubt: exactly one settlement is written; the other settler
/// is told who settled it.
pub async fn two_settlers_one_settlement(store: &dyn Journal, scope: &str) {
    const RULE: &str = "two settlers racing: exactly one wins";
    let k = key(scope, "settle-race");
    left_unfinished(store, k, &Owner::new(format!("{scope}-race-worker")), RULE).await;
    let alice = Settle::new(Verdict::Landed, "alice", "seen on the statement");
    let bob = Settle::new(Verdict::NotLanded, "bob", "not on the ledger");
    let (a, b) = tokio::join!(settle(store, &k, 1, &alice), settle(store, &k, 1, &bob));
    let (won, lost) = match (a, b) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        (a, b) => panic!("{RULE}: exactly one settlement must be written: {a:?}, {b:?}"),
    };
    let winner = won.settled.as_ref().map(|s| s.by.clone()).unwrap_or_default();
    match &lost {
        SettleError::AlreadySettled { record, .. } => {
            assert_eq!(record.as_ref(), &won, "{RULE}: the loser is told of the winner's settlement")
        }
        other => panic!("{RULE}: the loser should be told {winner} settled it, got: {other}"),
    }
    assert!(lost.to_string().contains(&format!("by {winner}")), "{RULE}: {lost}");
    assert_eq!(last(store, k).await.1, won, "{RULE}");
}

/// A person's verdict is recorded on the attempt they examined, or not at all: a settlement of attempt
/// 1 made after attempt 2 started (the agent probed, found nothing, tried again, and is in doubt again)
/// is refused, naming attempt 2 and its state, and writes nothing; so is one naming an attempt that
/// never was. Settling attempt 2 by its number then works.
pub async fn a_settlement_is_bound_to_its_attempt(store: &dyn Journal, scope: &str) {
    const RULE: &str = "a settlement lands on the attempt it names, or nowhere";
    let worker = Owner::new(format!("{scope}-bound-worker"));
    let k = key(scope, "settle-bound");
    // The agent's attempt 1 is left unfinished, and the person opens its page ... while the agent
    // probes it (not landed), makes attempt 2, and that one ends in doubt too. One claim throughout: a
    // release may reach the store after a claim made just after it.
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    store
        .end(&worker, verdict(k, 1, ProbeMark::NotLanded).as_record_ref(), Durability::Buffered)
        .await
        .expect(RULE);
    store.start(&worker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    let unknown = end(k, 2, Outcome::Unknown, Applied::Unknown, "timed out");
    store.end(&worker, unknown.as_record_ref(), Durability::Buffered).await.expect(RULE);
    store.release(&k, &worker);
    let before = last(store, k).await;
    let not_landed = Settle::new(Verdict::NotLanded, "alice", "attempt 1 is not on the statement");
    for (named, says) in [(1, "attempt 2 ("), (3, "no attempt 3")] {
        match settle(store, &k, named, &not_landed).await {
            Err(e @ SettleError::OtherAttempt { .. }) => {
                let said = e.to_string();
                assert!(said.contains(says) && said.contains("ended unknown"), "{RULE}: {said}");
            }
            other => panic!("{RULE}: a settlement of attempt {named} after attempt 2: {other:?}"),
        }
        assert_eq!(last(store, k).await, before, "{RULE}: nothing is written");
    }
    let in_doubt = store.unresolved().await.expect("the store answers");
    assert!(in_doubt.iter().any(|r| r.last.intent_key == k), "{RULE}: attempt 2 is still in doubt");
    let written = settle(store, &k, 2, &not_landed).await.unwrap_or_else(|e| panic!("{RULE}: {e}"));
    assert_eq!((written.phase, written.attempt), (Phase::Settled, 2), "{RULE}");
}

/// A question to a person before attempt `attempt + 1`, as [`tool_contract::person::LogApprover`] asks it.
pub(super) fn question(key: IntentKey, attempt: u32) -> Record {
    Record {
        message: Some(format!("approval of attempt {} asked", attempt + 1)),
        approval: Some(ApprovalNote {
            step: ApprovalStep::Asked,
            by: "an operator".to_owned(),
            why: "503 from the bank".to_owned(),
            at: "2026-12-01T00:00:01Z".to_owned(),
            until: Some("2999-01-01T00:00:00Z".to_owned()),
            os_user: None,
            question: None,
            asks: Default::default(),
            asked_in: None,
            args: None,
            shows: Default::default(),
        }),
        ..record(key, Phase::Approval, attempt)
    }
}

/// Approvals through the store ([`Approvals::approval_step`], [`answer_approval`]): a question is kept
/// as the intent's last approval record and never as its last word, nor does it change its attempts
/// or the intents in doubt; two people answering at once, exactly one answer is written and the other
/// is told whose; an answer to no question, or to another attempt's, is refused with nothing written;
/// the next attempt starts as numbered before.
pub async fn approvals_answer_once(store: &dyn Approvals, scope: &str) {
    const RULE: &str = "one question, at most one answer, and neither is an intent's last word";
    let k = key(scope, "approval");
    let worker = Owner::new(format!("{scope}-approval-worker"));
    let ask = |rule| async move {
        match answer_approval(store, &k, 2, &Decision::approve("carol", "checked")).await {
            Err(ApprovalError::NotAsked { .. }) => {}
            other => panic!("{rule}: an answer with no question waiting is refused, got {other:?}"),
        }
    };
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 1).as_record_ref(), Durability::Synced).await.expect(RULE);
    let ended = end(k, 1, Outcome::Retryable, Applied::No, "503 from the bank");
    store.finish(&worker, ended.as_record_ref(), Durability::Synced).await.expect(RULE);
    assert_eq!(store.approval(&k).await.expect(RULE), None, "{RULE}: nothing asked yet");
    ask(RULE).await;
    let asked = question(k, 1);
    assert!(store.approval_step(asked.as_record_ref()).await.expect(RULE), "{RULE}: a question is written");
    assert_eq!(store.approval(&k).await.expect(RULE).as_ref(), Some(&asked), "{RULE}: the question is kept");
    assert_eq!(last(store, k).await, (1, ended.clone()), "{RULE}: the question is not the last word");
    let in_doubt = store.unresolved().await.expect(RULE);
    assert!(in_doubt.iter().all(|r| r.last.intent_key != k), "{RULE}: a question puts nothing in doubt");
    // An answer about another attempt than the one asked of.
    match answer_approval(store, &k, 3, &Decision::approve("carol", "checked")).await {
        Err(ApprovalError::NotAsked { .. }) => {}
        other => panic!("{RULE}: an answer about attempt 3 when 2 is asked of is refused, got {other:?}"),
    }
    let alice = Decision::approve("alice", "the bank shows no charge");
    let bob = Decision::deny("bob", "refunded by hand");
    let (a, b) = tokio::join!(answer_approval(store, &k, 2, &alice), answer_approval(store, &k, 2, &bob));
    let (won, lost) = match (a, b) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        (a, b) => panic!("{RULE}: exactly one answer must be written: {a:?}, {b:?}"),
    };
    let winner = won.approval.as_ref().map(|n| n.by.clone()).unwrap_or_default();
    match &lost {
        ApprovalError::AlreadyAnswered { record } => {
            assert_eq!(record.as_ref(), &won, "{RULE}: the loser is told of the winner's answer")
        }
        other => panic!("{RULE}: the loser should be told {winner} answered, got: {other}"),
    }
    assert!(lost.to_string().contains(&format!("by {winner}")), "{RULE}: {lost}");
    assert_eq!(store.approval(&k).await.expect(RULE).as_ref(), Some(&won), "{RULE}: the answer is kept");
    assert_eq!(last(store, k).await, (1, ended), "{RULE}: an answer is not the last word");
    // The attempt asked about starts as numbered before the question.
    claim(store, k, &worker, RULE).await;
    store.start(&worker, record(k, Phase::Start, 2).as_record_ref(), Durability::Synced).await.expect(RULE);
    assert_eq!(last(store, k).await.0, 2, "{RULE}");
    store.release(&k, &worker);
}
