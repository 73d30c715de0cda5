//! The claims of an embedded store: who holds which intent, until when, and the fence on the records
//! written about an attempt (its start, its end, a probe's verdict).
//!
//! The memory and file stores keep their claims here, so both follow one rule; a shared store
//! implements the same rule in its own storage.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::{Claimed, Owner, Phase, Recall, RecordRef};
use crate::key::{IntentKey, KeyHashing};
use crate::rules::{self, Claiming, Holder};

/// The unexpired claims of one store, on the process's clock (tokio's, so a paused test clock moves
/// leases too).
#[derive(Debug, Default)]
pub(crate) struct Leases {
    held: HashMap<IntentKey, Lease, KeyHashing>,
}

/// One unexpired claim: its owner, until when, and the attempt it started under this claim.
#[derive(Debug)]
struct Lease {
    owner: Owner,
    until: Instant,
    started: Option<u32>,
}

impl Leases {
    /// Take or renew `key` for `owner`; `recall` is what the store knows of the intent.
    pub(crate) fn claim(
        &mut self,
        key: IntentKey,
        owner: &Owner,
        lease: Duration,
        recall: impl FnOnce() -> Option<Recall>,
    ) -> Claimed {
        let now = Instant::now();
        let until = now.checked_add(lease).unwrap_or(now + Duration::from_secs(86_400 * 365));
        // A store in the process answers its caller at once: no deadline can have passed.
        match rules::claim(self.held.get(&key).map(Lease::holder).as_ref(), owner, now, None) {
            Claiming::Busy { holder, until: held_until } => {
                return Claimed::Busy { holder, left: held_until - now };
            }
            // A renewal keeps what the owner started under its claim.
            Claiming::Renew => {
                if let Some(held) = self.held.get_mut(&key) {
                    held.until = until;
                }
            }
            // `Late` needs a deadline, and none is given here.
            Claiming::Take | Claiming::Late => {
                self.held.insert(key, Lease { owner: owner.clone(), until, started: None });
            }
        }
        Claimed::Held(recall())
    }

    /// Whether someone holds an unexpired claim on `key`: an intent a call is running.
    pub(crate) fn is_held(&self, key: &IntentKey) -> bool {
        self.held.get(key).is_some_and(|held| held.until > Instant::now())
    }

    /// Drop `owner`'s claim on `key`; another owner's claim stays.
    pub(crate) fn release(&mut self, key: &IntentKey, owner: &Owner) {
        if self.held.get(key).is_some_and(|held| held.owner == *owner) {
            self.held.remove(key);
        }
    }

    /// Whether `owner` may write `record` about an attempt of its claimed intent, `highest` being the
    /// highest attempt recorded: the reason it may not otherwise. Only the holder of an unexpired claim
    /// writes about an attempt; a start only for attempt = `highest` + 1 (and the attempt is then the
    /// holder's); an end only for the attempt the holder started, or, as a probe's verdict, for the
    /// highest attempt, which the holder resolves. So a record held back and delivered late, after the
    /// claim moved on, changes nothing.
    pub(crate) fn fence(
        &mut self,
        owner: &Owner,
        record: &RecordRef<'_>,
        highest: u32,
    ) -> Result<(), String> {
        let holder = self.held.get(&record.intent_key).map(Lease::holder);
        let probe = record.probe.is_some();
        rules::fence(holder.as_ref(), owner, record.phase, record.attempt, probe, highest, Instant::now())
            .map_err(|refused| refused.to_string())?;
        if record.phase == Phase::Start
            && let Some(held) = self.held.get_mut(&record.intent_key)
        {
            held.started = Some(record.attempt);
        }
        Ok(())
    }
}

impl Lease {
    /// The claim as the rules read it.
    fn holder(&self) -> Holder<Owner, Instant> {
        Holder { owner: self.owner.clone(), until: self.until, started: self.started }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::ProbeMark;

    fn record(key: IntentKey, phase: Phase, attempt: u32, probe: Option<ProbeMark>) -> RecordRef<'static> {
        RecordRef {
            phase,
            task: "t",
            call: "post",
            intent_key: key,
            attempt,
            attempt_id: "t-a",
            started: "2026-11-30T05:12:04Z",
            budget_left_s: 5,
            outcome: None,
            effect_applied: None,
            probe,
            message: None,
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_owner_at_a_time_until_the_lease_ends() {
        let key = crate::key::Intent::new("t", "a", "post", "x").key();
        let start = |attempt| record(key, Phase::Start, attempt, None);
        let (a, b) = (Owner::new("a"), Owner::new("b"));
        let mut leases = Leases::default();
        assert_eq!(leases.claim(key, &a, Duration::from_secs(5), || None), Claimed::Held(None));
        let busy = leases.claim(key, &b, Duration::from_secs(5), || None);
        assert_eq!(busy, Claimed::Busy { holder: a.clone(), left: Duration::from_secs(5) });
        assert!(leases.fence(&b, &start(1), 0).unwrap_err().contains("claimed by a"));
        assert_eq!(leases.fence(&a, &start(1), 0), Ok(()));
        assert!(leases.fence(&a, &start(3), 1).unwrap_err().contains("the next is 2"));
        // A release by someone else changes nothing; the lease's end frees the intent.
        leases.release(&key, &b);
        assert!(matches!(leases.claim(key, &b, Duration::from_secs(5), || None), Claimed::Busy { .. }));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(leases.fence(&a, &start(1), 0).unwrap_err().contains("expired"));
        assert_eq!(leases.claim(key, &b, Duration::from_secs(5), || None), Claimed::Held(None));
        leases.release(&key, &b);
        assert!(leases.fence(&b, &start(1), 0).unwrap_err().contains("no claim"));
    }

    #[tokio::test(start_paused = true)]
    async fn an_end_comes_from_the_attempts_starter_or_is_the_holders_probe_verdict() {
        let key = crate::key::Intent::new("t", "a", "post", "ends").key();
        let end = |attempt, probe| record(key, Phase::End, attempt, probe);
        let (a, b) = (Owner::new("a"), Owner::new("b"));
        let mut leases = Leases::default();
        leases.claim(key, &a, Duration::from_secs(5), || None);
        assert!(leases.fence(&a, &end(1, None), 0).unwrap_err().contains("did not start attempt 1"));
        leases.fence(&a, &record(key, Phase::Start, 1, None), 0).unwrap();
        assert_eq!(leases.fence(&a, &end(1, None), 1), Ok(()));
        // A renewal keeps what the owner started.
        leases.claim(key, &a, Duration::from_secs(5), || None);
        assert_eq!(leases.fence(&a, &end(1, Some(ProbeMark::NotLanded)), 1), Ok(()));
        // a's lease runs out and b takes over: a's late end is refused; b may only give a probe's
        // verdict on the highest attempt, not an end of its own for an attempt it never started.
        tokio::time::advance(Duration::from_secs(5)).await;
        leases.claim(key, &b, Duration::from_secs(5), || None);
        assert!(leases.fence(&a, &end(1, None), 1).unwrap_err().contains("claimed by b"));
        assert!(leases.fence(&b, &end(1, None), 1).unwrap_err().contains("did not start attempt 1"));
        assert_eq!(leases.fence(&b, &end(1, Some(ProbeMark::Landed)), 1), Ok(()));
        assert!(leases.fence(&b, &end(0, Some(ProbeMark::Landed)), 1).is_err(), "not the highest");
    }
}
