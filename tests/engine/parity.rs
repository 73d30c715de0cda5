//! Issue 22, item 1: one executor of the policy for every shape. Each effect kind, through the same
//! sequence of answers and the same probe, as a single call and as a bulk call of one item: the same
//! report, field for field, and the same message once each shape's account of its attempt is set
//! aside (the single call's last error; the bulk call's count of items).

use super::*;

/// What an attempt answers.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Ok,
    /// `503`, nothing applied.
    Refused,
    /// `429` with `Retry-After: 2`.
    Limited,
    /// `429` with `Retry-After: 120`, longer than the budget.
    LimitedLong,
    /// No reply: the effect may have landed.
    Reset,
    /// `400`: the same call gives the same answer.
    Bad,
    /// `502` after part of the write went through: retryable, but something applied.
    Part,
}

fn class(says: Answer) -> Result<u64, Class> {
    match says {
        Answer::Ok => Ok(7),
        Answer::Refused => Err(Class::retryable("503 from /api")),
        Answer::Limited => Err(Class::retryable("429 from /api").retry_after(Duration::from_secs(2))),
        Answer::LimitedLong => Err(Class::retryable("429 from /api").retry_after(Duration::from_secs(120))),
        Answer::Reset => Err(Class::unknown("connection reset after the request was sent")),
        Answer::Bad => Err(Class::permanent("400 from /api: no such thread")),
        Answer::Part => {
            Err(Class::retryable("502 from /api after part of the write").with_effect(Applied::Partial))
        }
    }
}

/// What the probe says, every time it is asked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Found {
    Landed,
    NotLanded,
    CannotTell,
    /// The tool has no probe.
    NoProbe,
}

struct Ran {
    report: tool_contract::Report<u64>,
    attempts: u32,
    probes: u32,
    /// How the shape itself accounts for its attempt: the single call's last error, the bulk call's
    /// count of items.
    own: Vec<String>,
}

fn segments(message: &str) -> Vec<String> {
    message.split("; ").map(str::to_owned).collect()
}

async fn single(kind: EffectKind, script: &[Answer], found: Found, name: &str) -> Ran {
    let spec = spec("sync_row", kind).max_attempts(3).deadline_floor(Duration::from_secs(1));
    let task = Task::new(format!("single-{name}"), "agent", Duration::from_secs(30))
        .approver(Approves(Approval::Approved));
    let (attempts, probes) = (AtomicU32::new(0), AtomicU32::new(0));
    let attempt = |_| {
        let n = attempts.fetch_add(1, Ordering::SeqCst) as usize;
        let says = script[n.min(script.len() - 1)];
        async move { class(says) }
    };
    let key = task.key(&spec, &"row-1", None);
    let report = if found == Found::NoProbe {
        engine::run(&task, &spec, key, attempt, NoProbe).await
    } else {
        engine::run(&task, &spec, key, attempt, |_| {
            probes.fetch_add(1, Ordering::SeqCst);
            async move {
                match found {
                    Found::Landed => Probe::Landed(7),
                    Found::NotLanded => Probe::NotLanded,
                    _ => Probe::Failed("the service is down".into()),
                }
            }
        })
        .await
    };
    // The last error the single call reports on, as the policy saw it.
    let last = script[(attempts.load(Ordering::SeqCst) as usize).saturating_sub(1).min(script.len() - 1)];
    let mut own = match class(last) {
        Err(class) => segments(class.message()),
        Ok(_) => Vec::new(),
    };
    own.push("the probe found it did not land".to_owned());
    own.push("sync_row done on attempt 1".to_owned());
    own.push("sync_row done on attempt 2".to_owned());
    own.push("sync_row done on attempt 3".to_owned());
    Ran { report, attempts: attempts.into_inner(), probes: probes.into_inner(), own }
}

async fn bulk(kind: EffectKind, script: &[Answer], found: Found, name: &str) -> Ran {
    let spec = spec("sync_row", kind).max_attempts(3).deadline_floor(Duration::from_secs(1));
    let task = Task::new(format!("bulk-{name}"), "agent", Duration::from_secs(30))
        .approver(Approves(Approval::Approved));
    let (attempts, probes) = (AtomicU32::new(0), AtomicU32::new(0));
    let attempt = |_, rows: Vec<&'static str>| {
        let n = attempts.fetch_add(1, Ordering::SeqCst) as usize;
        let says = script[n.min(script.len() - 1)];
        async move { class(says).map(|_| rows.iter().map(|r| Item::ok(*r)).collect::<Vec<_>>()) }
    };
    let key = task.key(&spec, &"row-1", None);
    let report = if found == Found::NoProbe {
        engine::run_bulk(&task, &spec, key, vec!["row-1"], attempt, NoProbe).await
    } else {
        engine::run_bulk(&task, &spec, key, vec!["row-1"], attempt, |_, rows: Vec<&'static str>| {
            probes.fetch_add(1, Ordering::SeqCst);
            async move {
                rows.iter()
                    .map(|r| match found {
                        Found::Landed => Item::ok(*r),
                        Found::NotLanded => Item { applied: Applied::No, ..Item::retryable(*r, "") },
                        _ => Item::unknown(*r, "the service is down"),
                    })
                    .collect()
            }
        })
        .await
    };
    let own = segments(&report.message)
        .into_iter()
        .filter(|s| s.starts_with("sync_row: ") || s.starts_with("1 "))
        .collect();
    let report = report.map(|()| 7u64);
    Ran { report, attempts: attempts.into_inner(), probes: probes.into_inner(), own }
}

/// An approver that always says the same.
struct Approves(Approval);

impl Approve for Approves {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> tool_contract::journal::BoxFuture<'a, Approval> {
        let answer = self.0.clone();
        Box::pin(async move { answer })
    }
}

/// The message without the shape's own account of its attempt.
fn why(ran: &Ran) -> Vec<String> {
    // Attempt ids name the task and the key, which differ between the two calls.
    let message = match ran.report.attempt_id.rsplit_once("-a") {
        Some((prefix, _)) if !prefix.is_empty() => ran.report.message.replace(prefix, "TASK"),
        _ => ran.report.message.clone(),
    };
    segments(&message).into_iter().filter(|s| !ran.own.contains(s)).collect()
}

#[tokio::test(start_paused = true)]
async fn every_kind_ends_the_same_as_a_single_call_and_as_a_bulk_call() {
    use Answer::*;
    let scripts: [&[Answer]; 9] = [
        &[Refused, Ok],
        &[Limited, Ok],
        &[LimitedLong],
        &[Refused, Refused, Refused],
        &[Reset, Ok],
        &[Reset, Reset, Reset],
        &[Bad],
        &[Part, Ok],
        &[Part, Part, Part],
    ];
    let kinds =
        [EffectKind::Read, EffectKind::Create, EffectKind::Send, EffectKind::Money, EffectKind::Destructive];
    let mut compared = 0;
    for kind in kinds {
        for script in scripts {
            for found in [Found::Landed, Found::NotLanded, Found::CannotTell, Found::NoProbe] {
                if kind == EffectKind::Read && found != Found::NoProbe {
                    continue;
                }
                let name = format!("{kind:?}-{script:?}-{found:?}");
                let one = single(kind, script, found, &name).await;
                let many = bulk(kind, script, found, &name).await;
                let (a, b) = (&one.report, &many.report);
                let context = format!("{name}\n  single: {}\n  bulk:   {}", a.message, b.message);
                assert_eq!(a.outcome, b.outcome, "outcome: {context}");
                assert_eq!(a.effect_applied, b.effect_applied, "effect: {context}");
                assert_eq!(a.retry_after_s, b.retry_after_s, "retry_after_s: {context}");
                assert_eq!(a.deadline_left_s, b.deadline_left_s, "deadline_left_s: {context}");
                assert_eq!(a.reason, b.reason, "reason: {context}");
                assert_eq!(
                    a.attempt_id.rsplit('-').next(),
                    b.attempt_id.rsplit('-').next(),
                    "attempt: {context}"
                );
                assert_eq!(
                    (one.attempts, one.probes),
                    (many.attempts, many.probes),
                    "attempts, probes: {context}"
                );
                assert_eq!(why(&one), why(&many), "message: {context}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 9 + 4 * 9 * 4);
}
