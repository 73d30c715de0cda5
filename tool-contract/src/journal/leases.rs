//! The claims of an embedded store: who holds which intent, until when, and the fence on start records.
//!
//! The memory and file stores keep their claims here, so both follow one rule; a shared store
//! implements the same rule in its own storage.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::{Claimed, Owner, Recall};
use crate::key::{IntentKey, KeyHashing};

/// The unexpired claims of one store, on the process's clock (tokio's, so a paused test clock moves
/// leases too).
#[derive(Debug, Default)]
pub(crate) struct Leases {
    held: HashMap<IntentKey, (Owner, Instant), KeyHashing>,
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
        if let Some((holder, until)) = self.held.get(&key)
            && holder != owner
            && *until > now
        {
            return Claimed::Busy { holder: holder.clone(), left: *until - now };
        }
        let until = now.checked_add(lease).unwrap_or(now + Duration::from_secs(86_400 * 365));
        self.held.insert(key, (owner.clone(), until));
        Claimed::Held(recall())
    }

    /// Drop `owner`'s claim on `key`; another owner's claim stays.
    pub(crate) fn release(&mut self, key: &IntentKey, owner: &Owner) {
        if self.held.get(key).is_some_and(|(holder, _)| holder == owner) {
            self.held.remove(key);
        }
    }

    /// Whether a start of `attempt` by `owner` may be written, given the highest attempt recorded: the
    /// reason it may not otherwise.
    pub(crate) fn fence(
        &self,
        key: &IntentKey,
        owner: &Owner,
        attempt: u32,
        highest: u32,
    ) -> Result<(), String> {
        match self.held.get(key) {
            None => return Err(format!("{owner} holds no claim on the intent")),
            Some((holder, _)) if holder != owner => {
                return Err(format!("the intent is claimed by {holder}, not {owner}"));
            }
            Some((_, until)) if *until <= Instant::now() => {
                return Err(format!("the claim of {owner} has expired"));
            }
            Some(_) => {}
        }
        if attempt != highest.saturating_add(1) {
            return Err(format!("attempt {highest} is the highest recorded, so the next is {}", highest + 1));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_owner_at_a_time_until_the_lease_ends() {
        let key = crate::Intent::new("t", "a", "post", "x").key();
        let (a, b) = (Owner::new("a"), Owner::new("b"));
        let mut leases = Leases::default();
        assert_eq!(leases.claim(key, &a, Duration::from_secs(5), || None), Claimed::Held(None));
        let busy = leases.claim(key, &b, Duration::from_secs(5), || None);
        assert_eq!(busy, Claimed::Busy { holder: a.clone(), left: Duration::from_secs(5) });
        assert!(leases.fence(&key, &b, 1, 0).unwrap_err().contains("claimed by a"));
        assert_eq!(leases.fence(&key, &a, 1, 0), Ok(()));
        assert!(leases.fence(&key, &a, 3, 1).unwrap_err().contains("the next is 2"));
        // A release by someone else changes nothing; the lease's end frees the intent.
        leases.release(&key, &b);
        assert!(matches!(leases.claim(key, &b, Duration::from_secs(5), || None), Claimed::Busy { .. }));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(leases.fence(&key, &a, 1, 0).unwrap_err().contains("expired"));
        assert_eq!(leases.claim(key, &b, Duration::from_secs(5), || None), Claimed::Held(None));
        leases.release(&key, &b);
        assert!(leases.fence(&key, &b, 1, 0).unwrap_err().contains("no claim"));
    }
}
