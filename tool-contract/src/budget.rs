//! The retry budget: a storm guard shared by every task that calls one service.
//!
//! When a service is down, each task retrying it on its own multiplies the load on it by the attempt
//! limit. A retry budget caps the retries of all tasks together at a share of the first attempts made
//! recently, plus a small floor per second so a quiet service can still be retried: by default 20 % of
//! the first attempts of the last 10 s, plus 10 retries a second (the semantics of Finagle's retry
//! budget and tower's `TpsBudget`). A retry it refuses ends the call `retryable`, its effect as known,
//! with "retry budget spent for SERVICE"; the caller decides when to come back. Probes are never
//! refused: they are the reads that resolve an `unknown`, and they retry nothing.
//!
//! The budgets are kept per service name ([`crate::spec::ToolSpec::service`], by default the tool's name) in
//! a [`RetryBudgets`], shared by a task's clones and the tasks made from it with [`crate::Task::new_like`]
//! (as the MCP server and the rig adapter make one per call); give tasks made otherwise the same one
//! with [`crate::Task::retry_budgets`].
//!
//! ```
//! use std::time::Duration;
//! use tool_contract::budget::{RetryBudget, RetryBudgets};
//! use tool_contract::Task;
//!
//! // A third of recent first attempts, and 2 retries a second, over a 30 s window.
//! let budgets = RetryBudgets::new(RetryBudget::new(Duration::from_secs(30), 2, 33));
//! let task = Task::new("ord-7741", "agent", Duration::from_secs(30)).retry_budgets(budgets.clone());
//! # let _ = task;
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// How many slots the window is kept in: deposits and withdrawals leave it a tenth at a time.
const SLOTS: usize = 10;
/// Amounts are counted in thousandths of a retry, so a percentage deposits whole numbers.
const SCALE: i64 = 1000;

/// The shape of a retry budget: over `window`, retries may make up `percent` % of first attempts,
/// plus `floor_per_s` retries for each second of the window whatever the first attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudget {
    window: Duration,
    floor_per_s: u32,
    percent: u32,
}

impl RetryBudget {
    /// Finagle's and tower's defaults: a 10 s window, 10 retries a second, 20 % of first attempts.
    pub const DEFAULT: RetryBudget =
        RetryBudget { window: Duration::from_secs(10), floor_per_s: 10, percent: 20 };

    /// A budget of `percent` % of the first attempts of the last `window` (a whole number of seconds,
    /// at least 1; shorter is taken as 1 s), plus `floor_per_s` retries a second. `percent` above 1,000
    /// is taken as 1,000 (ten retries per first attempt).
    pub const fn new(window: Duration, floor_per_s: u32, percent: u32) -> RetryBudget {
        let window = if window.as_secs() == 0 {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(window.as_secs())
        };
        let percent = if percent > 1000 { 1000 } else { percent };
        RetryBudget { window, floor_per_s, percent }
    }

    /// No limit: every retry the policy allows is made.
    pub const UNLIMITED: RetryBudget =
        RetryBudget { window: Duration::from_secs(1), floor_per_s: u32::MAX, percent: 0 };

    /// The window retries and first attempts are counted over.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// The retries allowed per second whatever the first attempts.
    pub fn floor_per_s(&self) -> u32 {
        self.floor_per_s
    }

    /// The share of first attempts that may be retried, in percent.
    pub fn percent(&self) -> u32 {
        self.percent
    }

    /// The retries always allowed over one window.
    fn reserve(&self) -> i64 {
        i64::from(self.floor_per_s).saturating_mul(self.window.as_secs() as i64).saturating_mul(SCALE)
    }
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget::DEFAULT
    }
}

/// The retry budgets of every service, by name: one [`RetryBudget`] shape, one running account per
/// service. Cloning shares the accounts.
#[derive(Debug, Clone)]
pub struct RetryBudgets {
    shape: RetryBudget,
    /// One account per service; a process calls a handful of services, so a short list searched in
    /// order costs less than hashing the name.
    accounts: Arc<Mutex<Accounts>>,
}

/// Each service's name and account.
type Accounts = Vec<(Box<str>, Account)>;

impl Default for RetryBudgets {
    fn default() -> Self {
        RetryBudgets::new(RetryBudget::DEFAULT)
    }
}

/// Why a retry was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spent {
    /// When the budget will have room again, as far as is known now (the oldest retries leaving the
    /// window); `None` when only new first attempts can make room.
    pub wait: Option<Duration>,
}

impl RetryBudgets {
    /// Budgets of this shape for every service.
    pub fn new(shape: RetryBudget) -> RetryBudgets {
        RetryBudgets { shape, accounts: Arc::default() }
    }

    /// The shape every service's budget has.
    pub fn shape(&self) -> RetryBudget {
        self.shape
    }

    /// Count a first attempt of a call to `service`.
    pub fn first_attempt(&self, service: &str) {
        self.first_attempt_at(service, Instant::now());
    }

    /// [`first_attempt`](Self::first_attempt) at `now`, a clock the caller has just read.
    pub(crate) fn first_attempt_at(&self, service: &str, now: Instant) {
        if self.shape == RetryBudget::UNLIMITED {
            return;
        }
        let deposit = i64::from(self.shape.percent) * SCALE / 100;
        self.with_at(service, now, |account| account.add(deposit));
    }

    /// Take one retry of a call to `service` from its budget, or say why not.
    pub fn retry(&self, service: &str) -> Result<(), Spent> {
        if self.shape == RetryBudget::UNLIMITED {
            return Ok(());
        }
        let reserve = self.shape.reserve();
        self.with(service, |account| {
            if account.balance() + reserve >= SCALE {
                account.add(-SCALE);
                Ok(())
            } else {
                Err(Spent { wait: account.room_after(reserve) })
            }
        })
    }

    /// Whether `service`'s budget has room for one more retry now, without taking it.
    pub fn room(&self, service: &str) -> Result<(), Spent> {
        if self.shape == RetryBudget::UNLIMITED {
            return Ok(());
        }
        let reserve = self.shape.reserve();
        self.with(service, |account| {
            if account.balance() + reserve >= SCALE {
                Ok(())
            } else {
                Err(Spent { wait: account.room_after(reserve) })
            }
        })
    }

    fn with<R>(&self, service: &str, f: impl FnOnce(&mut Account) -> R) -> R {
        self.with_at(service, Instant::now(), f)
    }

    fn with_at<R>(&self, service: &str, now: Instant, f: impl FnOnce(&mut Account) -> R) -> R {
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        let at = match accounts.iter().position(|(name, _)| **name == *service) {
            Some(at) => at,
            None => {
                // Most tasks call one service: the first account takes room for itself alone, not the
                // four a vector's first growth makes (over 400 bytes a task).
                if accounts.is_empty() {
                    accounts.reserve_exact(1);
                }
                accounts.push((service.into(), Account::new(now, self.shape.window / SLOTS as u32)));
                accounts.len() - 1
            }
        };
        let account = &mut accounts[at].1;
        account.advance(now);
        f(account)
    }
}

/// One service's deposits (first attempts) and withdrawals (retries), per slot of the window.
#[derive(Debug)]
struct Account {
    slots: [i64; SLOTS],
    /// The slot the current time falls in.
    current: usize,
    /// When the current slot began.
    began: Instant,
    /// How long a slot lasts.
    slot: Duration,
}

impl Account {
    fn new(now: Instant, slot: Duration) -> Account {
        Account { slots: [0; SLOTS], current: 0, began: now, slot }
    }

    /// Move the window to `now`, emptying the slots it left. A clock that went back (another runtime's
    /// paused clock) keeps the current slot.
    fn advance(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.began);
        if elapsed < self.slot {
            // Still in the current slot: most calls.
            return;
        }
        let passed = elapsed.as_nanos() / self.slot.as_nanos().max(1);
        if passed == 0 {
            return;
        }
        if passed >= SLOTS as u128 {
            // The whole window has gone by.
            self.slots = [0; SLOTS];
            self.began = now;
            return;
        }
        for _ in 0..passed {
            self.current = (self.current + 1) % SLOTS;
            self.slots[self.current] = 0;
        }
        self.began += self.slot * passed as u32;
    }

    fn add(&mut self, amount: i64) {
        self.slots[self.current] = self.slots[self.current].saturating_add(amount);
    }

    fn balance(&self) -> i64 {
        self.slots.iter().sum()
    }

    /// How long until slots leaving the window make room for one retry; `None` when none would.
    fn room_after(&self, reserve: i64) -> Option<Duration> {
        let mut balance = self.balance();
        let into_slot = self.began.elapsed().min(self.slot);
        // The oldest slot is the one after the current; it leaves at the end of the current slot.
        for passed in 1..=SLOTS {
            let leaving = (self.current + passed) % SLOTS;
            balance -= self.slots[leaving];
            if balance + reserve >= SCALE {
                return Some(self.slot * passed as u32 - into_slot);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_task_that_calls_one_service_keeps_one_account() {
        // Every task made with `Task::new` has budgets of its own: row 4 of BENCHMARKS.md pays for
        // each account a task keeps room for.
        let budgets = RetryBudgets::default();
        budgets.first_attempt("smtp");
        assert_eq!(budgets.accounts.lock().map(|a| a.capacity()).unwrap_or(0), 1);
        budgets.first_attempt("smtp");
        budgets.first_attempt("sms");
        let accounts = budgets.accounts.lock().map(|a| a.len()).unwrap_or(0);
        assert_eq!(accounts, 2, "one account per service");
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stay_within_the_share_of_first_attempts_plus_the_floor() {
        let budgets = RetryBudgets::new(RetryBudget::new(Duration::from_secs(10), 1, 20));
        for _ in 0..100 {
            budgets.first_attempt("smtp");
        }
        // 20 % of 100, plus 1 a second for 10 s.
        let allowed = (0..1000).filter(|_| budgets.retry("smtp").is_ok()).count();
        assert_eq!(allowed, 30);
        // Another service has its own account.
        assert!(budgets.retry("sms").is_ok());
        // The window moves on: after 10 s the old withdrawals and deposits are gone.
        let spent = budgets.retry("smtp").unwrap_err();
        assert!(spent.wait.is_some_and(|w| w <= Duration::from_secs(10)), "{spent:?}");
        tokio::time::sleep(Duration::from_secs(10)).await;
        let allowed = (0..1000).filter(|_| budgets.retry("smtp").is_ok()).count();
        assert_eq!(allowed, 10, "the floor alone");
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_given_is_when_room_comes_back() {
        let budgets = RetryBudgets::new(RetryBudget::new(Duration::from_secs(10), 0, 100));
        budgets.first_attempt("smtp");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(budgets.retry("smtp").is_ok());
        let spent = budgets.retry("smtp").unwrap_err();
        // The deposit and the withdrawal leave together, 10 s after the deposit: nothing comes back.
        assert_eq!(spent.wait, None);
        let budgets = RetryBudgets::new(RetryBudget::new(Duration::from_secs(10), 1, 0));
        for _ in 0..10 {
            assert!(budgets.retry("smtp").is_ok());
        }
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let spent = budgets.retry("smtp").unwrap_err();
        // The ten withdrawals leave with their slot, 10 s after they were made: 7.5 s from now.
        assert_eq!(spent.wait, Some(Duration::from_millis(7500)));
        tokio::time::sleep(Duration::from_millis(7500)).await;
        assert!(budgets.retry("smtp").is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn unlimited_never_refuses() {
        let budgets = RetryBudgets::new(RetryBudget::UNLIMITED);
        assert!((0..100_000).all(|_| budgets.retry("smtp").is_ok()));
    }
}
