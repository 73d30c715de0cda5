//! A fake service with a programmable fault plan that counts the effects it really applied.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

use tool_contract::classify::{self, Body, Class, HttpReply};
use tool_contract::effect::EffectKind;
use tool_contract::key::IntentKey;
use tool_contract::probe::Probe;
use tool_contract::{Applied, Item};

mod held;

use held::{Holding, Pending};

/// One injected failure, consumed by one request in the order planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Apply and reply at once.
    None,
    /// Apply, then lose the reply (the connection drops after the request was processed).
    DropReplyAfterApplying,
    /// Apply after `apply_after`, reply after `reply_after` (both from the request's arrival). The
    /// service goes on even when the caller stops waiting, as a real server does.
    Slow {
        /// When the effect lands.
        apply_after: Duration,
        /// When the reply is sent.
        reply_after: Duration,
    },
    /// Reply `status` (usually 200) with an error in the body; nothing applied.
    ErrorBody {
        /// The status sent with the error body.
        status: u16,
        /// What the body reports.
        body: Body,
    },
    /// Reply `status` (429 or 503) with this raw `Retry-After` header; nothing applied.
    RetryAfter {
        /// 429 or 503.
        status: u16,
        /// The header as sent: delta-seconds or an HTTP-date.
        header: String,
    },
    /// Refuse before applying anything (connection refused; the request never arrived).
    RefuseBeforeApplying,
    /// Hold the request for `after` without applying anything, then answer as `then` would. A caller
    /// killed meanwhile leaves the service with nothing applied for this request.
    Delay {
        /// How long the request is held.
        after: Duration,
        /// What happens after the hold.
        then: Box<Fault>,
    },
    /// Take the request and hold it out of sight: no reply comes, no lookup sees it, and it is applied
    /// `after` once its caller stopped waiting for it (a queue or a proxy that still delivers a request
    /// whose connection is gone). With `reset`, the connection is reset as soon as the request arrived;
    /// without, the caller waits until its own time limit, its cancellation or its death lets go.
    Held {
        /// How long after the caller let go the request is applied.
        after: Duration,
        /// The connection is reset at once instead of left hanging.
        reset: bool,
    },
    /// Batch: the listed items are refused for good, the deferred ones are answered "retry later",
    /// every other item is applied.
    Batch {
        /// Items refused for good.
        reject: Vec<String>,
        /// Items not applied this time, to retry.
        defer: Vec<String>,
    },
}

/// What the service answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Applied; the id of the created thing.
    Done(u64),
    /// Per item: `Ok(id)` applied, `Err((permanent?, reason))` not applied.
    Items(Vec<(String, ItemReply)>),
    /// A non-success status or an error in the body.
    Status {
        /// The status code.
        status: u16,
        /// The raw `Retry-After` header.
        retry_after: Option<String>,
        /// What the body says.
        body: Body,
    },
}

/// One item's answer in a batch reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemReply {
    /// Applied (now or by an earlier request with the same key).
    Applied,
    /// Refused for good.
    Rejected(String),
    /// Not applied this time; try again.
    Deferred(String),
}

/// The request did not produce a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// It never reached the service: nothing was applied.
    NotSent(String),
    /// It reached the service and the reply was lost: it may have been applied.
    NoReply(String),
}

/// What a probe finds at the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The effect of this key landed, with the id it produced.
    Landed(u64),
    /// A request with this key is being processed and has not landed yet.
    InFlight,
    /// Nothing with this key.
    NotFound,
}

/// A fake service for conformance tests: programmable faults, effects counted per idempotency key.
///
/// It runs on tokio's clock, so scenarios run on a paused clock in tests. Clones share one service.
///
/// ```
/// use tool_contract::key::Intent;
/// use tool_contract_testing::{FakeService, Fault, Reply, Transport};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let service = FakeService::new();
/// service.plan([Fault::DropReplyAfterApplying]);
/// let key = Intent::new("t", "a", "post", "thread-9").key();
/// assert!(matches!(service.submit(key).await, Err(Transport::NoReply(_))));
/// assert_eq!(service.effects(key), 1, "applied even though the reply was lost");
/// assert_eq!(service.submit(key).await, Ok(Reply::Done(2)));
/// assert_eq!(service.effects(key), 2, "this service does not deduplicate unless told to");
/// # }
/// ```
#[derive(Clone, Default)]
pub struct FakeService {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    plan: VecDeque<Fault>,
    probe_failures: u32,
    dedupe: bool,
    next_id: u64,
    requests: u32,
    arrivals: Vec<tokio::time::Instant>,
    probes: u32,
    /// Effects applied per key: for a single act, one entry per application.
    applied: HashMap<IntentKey, Vec<u64>>,
    /// Items applied per key, per item id.
    items: HashMap<IntentKey, HashMap<String, u32>>,
    in_flight: HashMap<IntentKey, u32>,
    /// Requests held out of sight, each with the instant it is applied.
    pending: Vec<Pending>,
}

impl FakeService {
    /// A service that applies every request and does not deduplicate.
    pub fn new() -> FakeService {
        FakeService::default()
    }

    /// The service's state, with every held request whose time has come applied.
    fn state(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.land_due();
        state
    }

    /// Queue faults for the next requests, one per request; after the plan, requests succeed.
    pub fn plan(&self, faults: impl IntoIterator<Item = Fault>) {
        self.state().plan.extend(faults);
    }

    /// Make the next `n` lookups fail.
    pub fn fail_probes(&self, n: u32) {
        self.state().probe_failures = n;
    }

    /// Honour the idempotency key: a repeated key returns the first result and applies nothing.
    pub fn dedupe_by_key(&self, on: bool) {
        self.state().dedupe = on;
    }

    /// Effects applied for `key` (a batch counts one per applied item).
    pub fn effects(&self, key: IntentKey) -> usize {
        let state = self.state();
        state.applied.get(&key).map_or(0, Vec::len)
            + state.items.get(&key).map_or(0, |items| items.values().map(|n| *n as usize).sum())
    }

    /// Effects applied for every key.
    pub fn total_effects(&self) -> usize {
        let state = self.state();
        state.applied.values().map(Vec::len).sum::<usize>()
            + state.items.values().flat_map(|items| items.values()).map(|n| *n as usize).sum::<usize>()
    }

    /// How many times one item of a batch was applied.
    pub fn item_effects(&self, key: IntentKey, item: &str) -> u32 {
        self.state().items.get(&key).and_then(|items| items.get(item)).copied().unwrap_or(0)
    }

    /// Requests received (attempts that reached the service, or were refused at its door).
    pub fn requests(&self) -> u32 {
        self.state().requests
    }

    /// When each request arrived, on tokio's clock.
    pub fn arrivals(&self) -> Vec<tokio::time::Instant> {
        self.state().arrivals.clone()
    }

    /// Lookups received.
    pub fn probes(&self) -> u32 {
        self.state().probes
    }

    /// Wait until no request is being processed or held (for checks after a scenario).
    pub async fn settle(&self) {
        while !self.state().idle() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One single-act request carrying `key`.
    pub async fn submit(&self, key: IntentKey) -> Result<Reply, Transport> {
        let mut fault = self.state().next_fault();
        while let Fault::Delay { after, then } = fault {
            tokio::time::sleep(after).await;
            fault = *then;
        }
        match fault {
            Fault::RefuseBeforeApplying => Err(Transport::NotSent("connection refused".to_owned())),
            Fault::ErrorBody { status, body } => Ok(Reply::Status { status, retry_after: None, body }),
            Fault::RetryAfter { status, header } => {
                Ok(Reply::Status { status, retry_after: Some(header), body: Body::Fine })
            }
            Fault::DropReplyAfterApplying => {
                self.apply(key);
                Err(Transport::NoReply("connection closed after the request was processed".to_owned()))
            }
            Fault::Slow { apply_after, reply_after } => slow(self, key, apply_after, reply_after).await,
            Fault::Held { after, reset } => Holding::new(self, key, None, after).cut(reset).await,
            Fault::None | Fault::Batch { .. } | Fault::Delay { .. } => Ok(Reply::Done(self.apply(key))),
        }
    }

    /// Apply one effect for `key` (or return the first one's id when deduplicating).
    pub fn apply(&self, key: IntentKey) -> u64 {
        self.state().apply_one(key)
    }

    /// One batch request carrying `key`, with these items.
    pub async fn submit_batch(&self, key: IntentKey, items: &[String]) -> Result<Reply, Transport> {
        let mut fault = self.state().next_fault();
        while let Fault::Delay { after, then } = fault {
            tokio::time::sleep(after).await;
            fault = *then;
        }
        let (reject, defer) = match fault {
            Fault::RefuseBeforeApplying => return Err(Transport::NotSent("connection refused".to_owned())),
            Fault::ErrorBody { status, body } => {
                return Ok(Reply::Status { status, retry_after: None, body });
            }
            Fault::RetryAfter { status, header } => {
                return Ok(Reply::Status { status, retry_after: Some(header), body: Body::Fine });
            }
            Fault::DropReplyAfterApplying => {
                self.state().apply_items(key, items, &[], &[]);
                return Err(Transport::NoReply("connection closed after the batch was processed".to_owned()));
            }
            Fault::Slow { apply_after, reply_after } => {
                return slow_batch(self, key, items, apply_after, reply_after).await;
            }
            Fault::Held { after, reset } => {
                return Holding::new(self, key, Some(items.to_vec()), after).cut(reset).await;
            }
            Fault::Batch { reject, defer } => (reject, defer),
            Fault::None | Fault::Delay { .. } => (Vec::new(), Vec::new()),
        };
        Ok(Reply::Items(self.state().apply_items(key, items, &reject, &defer)))
    }

    /// What a probe finds for `key`.
    pub fn lookup(&self, key: IntentKey) -> Result<Lookup, String> {
        let mut state = self.state();
        state.probes += 1;
        if state.probe_failures > 0 {
            state.probe_failures -= 1;
            return Err("lookup failed: 500 from the search index".to_owned());
        }
        if let Some(id) = state.applied.get(&key).and_then(|ids| ids.first()) {
            return Ok(Lookup::Landed(*id));
        }
        if state.in_flight.contains_key(&key) {
            return Ok(Lookup::InFlight);
        }
        Ok(Lookup::NotFound)
    }

    /// Which of `items` landed under `key`; an error while a batch with this key is still in flight,
    /// since its items cannot be told yet.
    pub fn lookup_items(&self, key: IntentKey, items: &[String]) -> Result<Vec<(String, bool)>, String> {
        let mut state = self.state();
        state.probes += 1;
        if state.probe_failures > 0 {
            state.probe_failures -= 1;
            return Err("lookup failed: 500 from the search index".to_owned());
        }
        if state.in_flight.contains_key(&key) {
            return Err("a batch with this key is still in flight".to_owned());
        }
        let applied = state.items.get(&key);
        Ok(items
            .iter()
            .map(|i| (i.clone(), applied.and_then(|a| a.get(i)).is_some_and(|n| *n > 0)))
            .collect())
    }

    /// [`FakeService::lookup_items`] by a probe that sees only what has landed: items of a batch still
    /// held read as not landed.
    pub fn lookup_items_landed(
        &self,
        key: IntentKey,
        items: &[String],
    ) -> Result<Vec<(String, bool)>, String> {
        let mut state = self.state();
        state.probes += 1;
        if state.probe_failures > 0 {
            state.probe_failures -= 1;
            return Err("lookup failed: 500 from the search index".to_owned());
        }
        let applied = state.items.get(&key);
        Ok(items
            .iter()
            .map(|i| (i.clone(), applied.and_then(|a| a.get(i)).is_some_and(|n| *n > 0)))
            .collect())
    }

    /// [`FakeService::lookup_items`], waiting out a batch still in flight (polling every 100 ms).
    pub async fn lookup_items_settled(
        &self,
        key: IntentKey,
        items: &[String],
    ) -> Result<Vec<(String, bool)>, String> {
        while self.state().in_flight.contains_key(&key) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.lookup_items(key, items)
    }

    /// A probe that waits out a request still in flight (polling every 100 ms, within the caller's
    /// budget), then says what landed.
    pub async fn lookup_settled(&self, key: IntentKey) -> Result<Lookup, String> {
        loop {
            match self.lookup(key)? {
                Lookup::InFlight => tokio::time::sleep(Duration::from_millis(100)).await,
                settled => return Ok(settled),
            }
        }
    }
}

impl State {
    /// Apply one effect for `key` (or return the first one's id when deduplicating).
    fn apply_one(&mut self, key: IntentKey) -> u64 {
        if self.dedupe
            && let Some(first) = self.applied.get(&key).and_then(|ids| ids.first())
        {
            return *first;
        }
        self.next_id += 1;
        let id = self.next_id;
        self.applied.entry(key).or_default().push(id);
        id
    }

    /// Count a request's arrival and take the fault planned for it.
    fn next_fault(&mut self) -> Fault {
        self.requests += 1;
        self.arrivals.push(tokio::time::Instant::now());
        self.plan.pop_front().unwrap_or(Fault::None)
    }

    /// One request carrying `key` finished processing.
    fn landed(&mut self, key: IntentKey) {
        if let Some(n) = self.in_flight.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.in_flight.remove(&key);
            }
        }
    }

    /// Apply the items of a batch but those rejected or deferred: what each item's reply is.
    fn apply_items(
        &mut self,
        key: IntentKey,
        items: &[String],
        reject: &[String],
        defer: &[String],
    ) -> Vec<(String, ItemReply)> {
        let dedupe = self.dedupe;
        let applied = self.items.entry(key).or_default();
        items
            .iter()
            .map(|item| {
                let reply = if reject.contains(item) {
                    ItemReply::Rejected(format!("{item} is invalid"))
                } else if defer.contains(item) {
                    ItemReply::Deferred(format!("{item} deferred: try again"))
                } else {
                    let n = applied.entry(item.clone()).or_default();
                    if !(dedupe && *n > 0) {
                        *n += 1;
                    }
                    ItemReply::Applied
                };
                (item.clone(), reply)
            })
            .collect()
    }
}

/// Processing that outlives the caller: the server task applies and replies on its own schedule.
async fn slow(
    service: &FakeService,
    key: IntentKey,
    apply_after: Duration,
    reply_after: Duration,
) -> Result<Reply, Transport> {
    let (tx, rx) = oneshot::channel();
    *service.state().in_flight.entry(key).or_default() += 1;
    let service = service.clone();
    tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        tokio::time::sleep(apply_after).await;
        let id = service.apply(key);
        service.state().landed(key);
        tokio::time::sleep_until(start + reply_after).await;
        let _ = tx.send(id);
    });
    match rx.await {
        Ok(id) => Ok(Reply::Done(id)),
        Err(_) => Err(Transport::NoReply("the server went away".to_owned())),
    }
}

/// A batch processed on the server's own schedule, going on when the caller stops waiting.
async fn slow_batch(
    service: &FakeService,
    key: IntentKey,
    items: &[String],
    apply_after: Duration,
    reply_after: Duration,
) -> Result<Reply, Transport> {
    let (tx, rx) = oneshot::channel();
    *service.state().in_flight.entry(key).or_default() += 1;
    let (service, items) = (service.clone(), items.to_vec());
    tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        tokio::time::sleep(apply_after).await;
        let replies = service.state().apply_items(key, &items, &[], &[]);
        service.state().landed(key);
        tokio::time::sleep_until(start + reply_after).await;
        let _ = tx.send(replies);
    });
    match rx.await {
        Ok(replies) => Ok(Reply::Items(replies)),
        Err(_) => Err(Transport::NoReply("the server went away".to_owned())),
    }
}

impl std::fmt::Debug for FakeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("FakeService")
            .field("requests", &state.requests)
            .field("probes", &state.probes)
            .field("planned", &state.plan.len())
            .finish()
    }
}

/// Translate a single-act answer of the fake into what a tool returns, the way a careful client does:
/// a `Done` is the value; a status or an error body is classified by [`classify::http`]; a request that
/// never left is `retryable` with nothing applied; a lost reply is `unknown` for a side effect.
///
/// [`classify::http`]: tool_contract::classify::http
pub fn single_result(kind: EffectKind, answer: Result<Reply, Transport>) -> Result<u64, Class> {
    match answer {
        Ok(Reply::Done(id)) => Ok(id),
        Ok(Reply::Status { status, retry_after, body }) => {
            let reply = HttpReply { status, retry_after: retry_after.as_deref(), body: &body };
            Err(classify::http(kind, reply)
                .unwrap_or_else(|| Class::permanent(format!("{status} without a value"))))
        }
        Ok(Reply::Items(_)) => Err(Class::permanent("a batch answer to a single request")),
        Err(Transport::NotSent(why)) => Err(classify::not_sent(why)),
        Err(Transport::NoReply(why)) => Err(classify::no_reply(kind, why)),
    }
}

/// Translate a batch answer of the fake into per-item results.
pub fn batch_result(kind: EffectKind, answer: Result<Reply, Transport>) -> Result<Vec<Item>, Class> {
    match answer {
        Ok(Reply::Items(items)) => Ok(items
            .into_iter()
            .map(|(id, reply)| match reply {
                ItemReply::Applied => Item::ok(id),
                ItemReply::Rejected(why) => Item::permanent(id, why),
                ItemReply::Deferred(why) => Item::retryable(id, why),
            })
            .collect()),
        Ok(Reply::Done(_)) => Err(Class::permanent("a single answer to a batch request")),
        other => single_result(kind, other).map(|_| Vec::new()),
    }
}

impl Lookup {
    /// What a probe that sees only what has landed finds: a request the service still holds reads as
    /// not found, the limit a tool's landing horizon exists for.
    pub fn landed_only(self) -> Lookup {
        match self {
            Lookup::InFlight => Lookup::NotFound,
            found => found,
        }
    }

    /// The probe verdict this lookup gives; a request still in flight cannot be told.
    pub fn into_probe(self) -> Probe<u64> {
        match self {
            Lookup::Landed(id) => Probe::Landed(id),
            Lookup::NotFound => Probe::NotLanded,
            Lookup::InFlight => Probe::Failed("a request with this key is still in flight".to_owned()),
        }
    }
}

/// Per-item probe verdicts for a batch: landed items `yes`, the rest `no`, all `unknown` if the lookup
/// failed.
pub fn batch_probe(found: Result<Vec<(String, bool)>, String>, asked: &[String]) -> Vec<Item> {
    match found {
        Ok(found) => found
            .into_iter()
            .map(|(id, landed)| {
                if landed {
                    Item::ok(id)
                } else {
                    Item { applied: Applied::No, ..Item::retryable(id, "not found") }
                }
            })
            .collect(),
        Err(why) => asked.iter().map(|id| Item::unknown(id.clone(), why.clone())).collect(),
    }
}
