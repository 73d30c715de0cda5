//! Who may run an intent's side effect now: the process's turn on the intent, then the store's claim.
//!
//! Two calls of one intent through one task (a model that issues the same tool call twice in parallel,
//! an MCP client that re-sends a call whose reply stream broke; a task's clones and the tasks made with
//! [`Task::new_like`](crate::Task::new_like) share its turns) take turns: the second waits for the
//! first, then starts from what the first left. That holds with no attempt log configured too: the
//! family keeps an intent's last word in memory while a call of it runs or waits, and afterwards for its
//! 1,024 most recent intents. With a log, the store's [`Journal::claim`] then fences the intent against
//! every other owner.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::guard::{ready_or_within, secs};
use super::machine::{Action, Event, Machine, Pacing};
use super::stop::Stop;
use crate::journal::{Claimed, Journal, Owner, Recall, RecordRef};
use crate::key::IntentKey;
use crate::report::{Applied, Outcome, Reason};
use crate::spec::ToolSpec;
use crate::task::{Task, Turn, Turns};

/// Take the intent's turn in this process and, with a log, its claim in the store: what is known of
/// the intent, or why the call may not start.
pub(crate) async fn take_claim<'a>(
    task: &'a Task,
    spec: &ToolSpec,
    key: IntentKey,
    machine: &mut Machine<tokio::time::Instant>,
) -> Result<(Claim<'a>, Option<Recall>), Stop> {
    let mut claim = Claim::turn(task.turns(), key).await;
    let Some(store) = task.journal_ref() else {
        let word = claim.word();
        return Ok((claim, word));
    };
    let recall = claim
        .in_store(store, || task.remaining(), (machine, spec.get_deadline_floor()), task.worker_name())
        .await?;
    Ok((claim, recall))
}
/// How long a claim outlives the budget it was taken for: room for the end record after the deadline.
pub(crate) const LEASE_MARGIN: Duration = Duration::from_secs(1);

/// The right to run one intent's side effect: this process's turn, and the store's claim when there is a
/// store. Both are given up when it is dropped, also when the call is cancelled.
pub(crate) struct Claim<'a> {
    turns: &'a Turns,
    key: IntentKey,
    turn: Arc<Turn>,
    held: Option<tokio::sync::OwnedMutexGuard<()>>,
    store: Option<(&'a dyn Journal, Owner)>,
    /// The store has given the claim up already ([`Journal::finish`]).
    finished: AtomicBool,
}

impl<'a> Claim<'a> {
    /// Wait for this process's turn on `key`.
    pub(crate) async fn turn(turns: &'a Turns, key: IntentKey) -> Claim<'a> {
        let turn = {
            // Counted under the family's lock, as the last user's leaving is: a turn is never left
            // while a call is about to wait on it.
            let mut turns = turns.lock();
            let turn = turns.enter(key);
            turn.users.fetch_add(1, Ordering::Relaxed);
            turn
        };
        // Built before the wait, so a call dropped while waiting still leaves the registry clean.
        let mut claim = Claim { turns, key, turn, held: None, store: None, finished: AtomicBool::new(false) };
        claim.held = Some(Arc::clone(&claim.turn.lock).lock_owned().await);
        claim
    }

    /// Claim the intent in `store` for a call with `budget` left, waiting within `budget` while another
    /// owner holds it; what the store knows of the intent, or why the call may not start: the store
    /// failed, or another owner holds the intent longer than the budget can wait. The lease is the call's
    /// `machine`'s ([`Budget::lease`](super::machine::Budget::lease)), and so is whether to wait: told
    /// the claim is held ([`Event::ClaimHeld`]), it names the wait or the stop, for a tool whose floor is
    /// `floor`; how often to look again is this loop's.
    pub(crate) async fn in_store(
        &mut self,
        store: &'a dyn Journal,
        budget: impl Fn() -> Duration,
        (machine, floor): (&mut Machine<tokio::time::Instant>, Duration),
        worker: Option<&str>,
    ) -> Result<Option<Recall>, Stop> {
        let owner = worker.map_or_else(Owner::unique, Owner::of_worker);
        // A holder that finishes early releases its claim: look again soon, then less often.
        let mut poll = Duration::from_millis(50);
        loop {
            let (now, left) = (tokio::time::Instant::now(), budget());
            let lease = machine.budget().lease(now, LEASE_MARGIN);
            let deadline = now + left;
            let answer = ready_or_within(store.claim_by(&self.key, &owner, lease, deadline), &budget).await;
            let answer = answer.unwrap_or_else(|| {
                Err(crate::journal::JournalError::Io {
                    context: "attempt log: the claim was not answered within the budget".to_owned(),
                    source: std::io::ErrorKind::TimedOut.into(),
                })
            });
            match answer {
                Ok(Claimed::Held(recall)) => {
                    self.store = Some((store, owner));
                    return Ok(recall);
                }
                Ok(Claimed::Busy { holder, left }) => {
                    // Wait while the budget can hold the wait and still start an attempt.
                    let (nap, at) = (left.min(poll), tokio::time::Instant::now());
                    machine.on(Event::ClaimHeld { nap });
                    let pacing = Pacing { floor, ..Pacing::default() };
                    let Some(Action::WaitUntil(until)) = machine.next(at, pacing) else {
                        return Err(busy(&holder, left, budget()));
                    };
                    tokio::time::sleep_until(until).await;
                    machine.on(Event::Waited);
                    poll = (poll * 2).min(Duration::from_secs(1));
                }
                // Nothing was started, and what an earlier attempt did is in a log that could not be read.
                Err(e) => {
                    return Err(Stop::new(
                        Outcome::Retryable,
                        Applied::Unknown,
                        format!(
                            "{e}; the intent could not be claimed, so nothing was started; whether an \
                             earlier attempt landed is in the log"
                        ),
                        None,
                        Reason::StoreFailed,
                    ));
                }
            }
        }
    }

    /// The owner the store knows this call by, once claimed in a store.
    pub(crate) fn owner(&self) -> Option<&Owner> {
        self.store.as_ref().map(|(_, owner)| owner)
    }

    /// Record that the store gave the claim up with the call's last record: dropping it releases
    /// nothing more.
    pub(crate) fn finished(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }

    /// The intent's last word as the calls of this process left it, when no store keeps it.
    pub(crate) fn word(&self) -> Option<Recall> {
        self.turn.word.lock().unwrap_or_else(|e| e.into_inner()).as_deref().cloned()
    }

    /// Keep `record` as the intent's last word for the calls waiting their turn, when no store keeps it.
    pub(crate) fn remember(&self, record: RecordRef<'_>) {
        let record = record.to_record();
        let mut word = self.turn.word.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *word {
            Some(recall) => recall.update(&record),
            None => *word = Some(Box::new(Recall::from_record(record))),
        }
    }
}

/// The stop of a call whose intent `holder` holds for `left` more, longer than the `budget` left.
fn busy(holder: &Owner, left: Duration, budget: Duration) -> Stop {
    Stop::new(
        Outcome::Retryable,
        Applied::Unknown,
        format!(
            "another worker ({holder}) is running this intent for up to {} more, longer than the {} left: \
             not started; call again after it, and the log will say what it did",
            secs(left),
            secs(budget)
        ),
        Some(left),
        Reason::Busy,
    )
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some((store, owner)) = self.store.take()
            && !self.finished.load(Ordering::Relaxed)
        {
            store.release(&self.key, &owner);
        }
        self.held = None;
        let mut turns = self.turns.lock();
        // The last user takes the intent out of the running; its last word, kept in memory when there
        // is no log, joins the recent ones.
        if self.turn.users.fetch_sub(1, Ordering::Relaxed) == 1 {
            turns.leave(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::Waker;

    use super::*;

    static TURNS: std::sync::LazyLock<Turns> = std::sync::LazyLock::new(Turns::default);

    fn held(key: &IntentKey) -> bool {
        TURNS.lock().active.contains_key(key)
    }

    #[tokio::test(start_paused = true)]
    async fn a_claim_is_released_by_its_last_holder_even_one_dropped_while_waiting() {
        let key = crate::Intent::new("claims", "test", "post", "x").key();
        let first = Claim::turn(&TURNS, key).await;
        assert!(held(&key));
        // A second call waits; the first finishes; the second is dropped (cancelled) before its turn.
        let mut waiting = Box::pin(Claim::turn(&TURNS, key));
        let noop = &mut std::task::Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(noop).is_pending(), "the second call waits for the first");
        drop(first);
        assert!(held(&key), "handed to the waiting call");
        drop(waiting);
        assert!(!held(&key), "nobody holds the intent: the registry forgets it");
        let again = Claim::turn(&TURNS, key).await;
        drop(again);
        assert!(!held(&key));
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_word_is_kept_while_a_call_waits_and_forgotten_after() {
        use crate::journal::Phase;
        let key = crate::Intent::new("claims", "test", "post", "word").key();
        let first = Claim::turn(&TURNS, key).await;
        let mut second = Box::pin(Claim::turn(&TURNS, key));
        assert!(
            std::pin::pin!(&mut second)
                .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
                .is_pending()
        );
        let record = crate::journal::Record {
            phase: Phase::Start,
            task: "claims".into(),
            call: "post".into(),
            intent_key: key,
            attempt: 1,
            attempt_id: "claims-a1".into(),
            started: "2026-11-30T05:12:04Z".into(),
            budget_left_s: 5,
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        };
        first.remember(record.as_record_ref());
        drop(first);
        let second = second.await;
        assert_eq!(second.word().map(|w| (w.attempts, w.last.phase)), Some((1, Phase::Start)));
        drop(second);
        assert!(!held(&key), "no call of the intent runs");
        let later = Claim::turn(&TURNS, key).await;
        assert_eq!(later.word().map(|w| w.attempts), Some(1), "a later call finds it among the recent ones");
        drop(later);
    }

    #[tokio::test(start_paused = true)]
    async fn a_family_without_a_log_remembers_a_bounded_number_of_intents() {
        use crate::journal::{Phase, Record};
        let turns = Turns::default();
        let record = |key| Record {
            phase: Phase::Start,
            task: "t".into(),
            call: "post".into(),
            intent_key: key,
            attempt: 1,
            attempt_id: "t-a1".into(),
            started: "2026-11-30T05:12:04Z".into(),
            budget_left_s: 5,
            outcome: None,
            effect_applied: None,
            probe: None,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        };
        let keys: Vec<IntentKey> = (0..crate::task::REMEMBERED + 10)
            .map(|n| crate::Intent::new("t", "a", "post", &n.to_string()).key())
            .collect();
        for &key in &keys {
            let claim = Claim::turn(&turns, key).await;
            claim.remember(record(key).as_record_ref());
        }
        let turns = &turns;
        let remembered = |key| async move { Claim::turn(turns, key).await.word().is_some() };
        assert!(!remembered(keys[0]).await, "the oldest is forgotten");
        assert!(remembered(keys[keys.len() - 1]).await, "the newest is kept");
    }
}
