//! Requests the service holds out of sight and applies after their caller let go ([`Fault::Held`]).
//!
//! [`Fault::Held`]: super::Fault::Held

use std::time::Duration;

use tokio::time::Instant;
use tool_contract::key::IntentKey;

use super::{FakeService, Reply, State, Transport};

/// A held request: applied at `at`, unseen by any lookup before.
pub(super) struct Pending {
    key: IntentKey,
    /// The batch's items, or `None` for a single act.
    items: Option<Vec<String>>,
    at: Instant,
}

/// A request the service holds while its caller still waits; dropped when the caller lets go (the
/// reset, its time limit, its cancellation, its process gone), which sets when it is applied.
pub(super) struct Holding {
    service: FakeService,
    key: IntentKey,
    items: Option<Vec<String>>,
    after: Duration,
}

impl Holding {
    pub(super) fn new(
        service: &FakeService,
        key: IntentKey,
        items: Option<Vec<String>>,
        after: Duration,
    ) -> Self {
        Holding { service: service.clone(), key, items, after }
    }

    /// The caller's side: a reset at once, or no reply for as long as the caller waits.
    pub(super) async fn cut(self, reset: bool) -> Result<Reply, Transport> {
        if reset {
            drop(self);
            return Err(Transport::NoReply("connection reset after the request was sent".to_owned()));
        }
        let _held = self;
        std::future::pending::<Result<Reply, Transport>>().await
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let at = Instant::now() + self.after;
        let pending = Pending { key: self.key, items: self.items.take(), at };
        self.service.state().pending.push(pending);
    }
}

impl State {
    /// Apply every held request whose time has come.
    pub(super) fn land_due(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let now = Instant::now();
        let (due, kept): (Vec<Pending>, Vec<Pending>) =
            std::mem::take(&mut self.pending).into_iter().partition(|p| p.at <= now);
        self.pending = kept;
        for Pending { key, items, .. } in due {
            match items {
                Some(items) => {
                    self.apply_items(key, &items, &[], &[]);
                }
                None => {
                    self.apply_one(key);
                }
            }
        }
    }

    /// No request is being processed or held.
    pub(super) fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty()
    }
}
