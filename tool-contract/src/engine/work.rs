//! What a shape of call is to the attempt loop ([`Work`]): a single call, or a call in parts (bulk
//! items, the pages of a read). A shape carries out its attempt and its probe, and says how its report
//! counts; it decides nothing: what it leaves undecided goes to the call's machine.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::{Duration, SystemTime};

use super::Run;
use super::log::Pending;
use super::stop::Stop;
use crate::call::Call;
use crate::classify::{Class, Classify};
use crate::journal::{Recall, Record};
use crate::policy::{End, Shape, Start};
use crate::probe::ProbeMark;
use crate::report::{Applied, Outcome, Report};
use crate::spec::ToolSpec;

/// One shape of call over the attempt loop.
pub(crate) trait Work {
    /// The value the call's report carries.
    type Value;
    /// What an attempt returns when the tool answers.
    type Answer;
    /// The tool's error, classified by the loop.
    type Error: Classify;

    /// Whether a probe exists: a side effect's attempt then keeps time back for it.
    fn has_probe(&self) -> bool;

    /// The report of a call stopped before another attempt (budget, approval, the store).
    fn stopped(&mut self, run: &Run<'_>, stop: Stop) -> Report<Self::Value>;

    /// The report of a call whose intent could not be claimed: nothing of it was attempted.
    fn refused(&mut self, run: &Run<'_>, stop: Stop) -> Report<Self::Value> {
        self.stopped(run, stop)
    }

    /// Continue from what an earlier call of this side-effecting intent left (`run` already numbers
    /// its attempts after it), which the call's machine says to do as `start`; `Some` when that already
    /// answers the call.
    fn resume(&mut self, run: &mut Run<'_>, recall: Recall, start: Start) -> Option<Report<Self::Value>>;

    /// What the call resumes, for the machine's start: one call, or a batch with the items `recall`'s
    /// last record lists.
    fn shape(&mut self, recall: &Recall) -> Shape<'_> {
        let _ = recall;
        Shape::One
    }

    /// Before every attempt, the first included: what there is to decide (a single call: how its last
    /// attempt failed, or how an earlier run left the intent in doubt; a batch: by
    /// [`policy::between`](crate::policy::between)). `Continue` with how the call stands, for its
    /// machine to decide from ([`super::execute::decide`]), or with `None` when the next attempt goes
    /// at once; `Break` with the report of a call with nothing left to do.
    fn undecided(&mut self, run: &Run<'_>, made: u32) -> ControlFlow<Report<Self::Value>, Option<Class>>;

    /// The next attempt goes: what it carries is set (a batch: the items still open).
    fn attempting(&mut self) {}

    /// Ask the probe about what may have landed and log its verdict: the verdict in the policy's
    /// words, or why the probe could not tell. Run by the executor, when the policy says to probe;
    /// `looked` is when it is asked, which its verdict is judged by.
    async fn probe(
        &mut self,
        run: &Run<'_>,
        of: &Class,
        looked: tokio::time::Instant,
    ) -> Result<ProbeMark, String>;

    /// Whether a probe's "not landed", from a probe that looked at `looked`, can be trusted yet: it
    /// looked once the attempt's landing horizon had passed.
    fn horizon(&self, run: &Run<'_>, of: &Class, looked: tokio::time::Instant) -> crate::policy::Horizon {
        run.machine.judge(of.effect(), looked, tokio::time::Instant::now())
    }

    /// The report of a call the policy ends with the last attempt's own outcome ([`End::AsIs`]), or
    /// with the probe's finding that it landed ([`End::Landed`]); every other end is a [`Stop`], which
    /// [`Work::stopped`] reports.
    fn close(&mut self, run: &Run<'_>, class: &Class, end: End) -> Report<Self::Value>;

    /// Whether a person may settle the call's intent when it resumes in doubt and its probe cannot
    /// tell ([`crate::person::Approve::settle`]); a shape whose report [`Work::settled`] answers from one
    /// settlement.
    fn asks_person(&self) -> bool {
        false
    }

    /// The report of a call a person settled as landed ([`End::Settled`]): `record`, written under the
    /// call's claim. A shape that does not ask a person stays in doubt.
    fn settled(&mut self, run: &Run<'_>, class: &Class, record: &Record) -> Report<Self::Value> {
        let _ = record;
        let why = "a batch is not settled as a whole";
        let stop =
            Stop::said(Outcome::Unknown, Applied::Unknown, class, why, None, crate::report::Reason::InDoubt);
        self.stopped(run, stop)
    }

    /// Why `value` is not a value of the tool (a person's settlement names one), if it is not.
    fn misfit(&self, value: &serde_json::Value) -> Option<String> {
        let _ = value;
        None
    }

    /// Why the call is refused before anything of it starts, when what it was given cannot be run as
    /// one intent (a batch that names one item twice).
    fn invalid(&self, spec: &ToolSpec) -> Option<Stop> {
        let _ = spec;
        None
    }

    /// What the attempt's start record carries, for a restart to resume from.
    fn before(&self) -> Option<serde_json::Value> {
        None
    }

    /// What a question to a person binds of the call (a call by name's arguments), taken once at its
    /// start.
    fn arguments(&mut self) -> Option<Box<crate::call::Arguments>> {
        None
    }

    /// The attempt itself.
    fn attempt(&mut self, call: Call) -> impl Future<Output = Result<Self::Answer, Self::Error>>;

    /// After an attempt: fold its answer (or its failure, classified) in and hand its end record to
    /// the store, whose answer, when it is still to come, is left in `pending`; `Some` when the call
    /// is over.
    fn after<'a>(
        &mut self,
        run: &mut Run<'a>,
        answer: Result<Self::Answer, Class>,
        left: Duration,
        started: SystemTime,
        pending: &mut Option<Pending<'a>>,
    ) -> Option<Report<Self::Value>>;
}
