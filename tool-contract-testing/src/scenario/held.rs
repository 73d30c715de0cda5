//! The held request: the service applies a request some seconds after its caller let go of it, and
//! only a landing horizon at least as long as that hold keeps the tool from sending it again.

use super::*;
use tool_contract::effect::horizon_text;

/// How the caller lets go of the request the service holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The connection is reset as soon as the request arrived.
    Reset,
    /// No reply comes: the attempt's own time limit drops it.
    TimedOut,
    /// The call is killed (cancelled, its process gone) a second in, and called again on the same log.
    Killed,
}

impl Cut {
    fn told(self) -> &'static str {
        match self {
            Cut::Reset => "after a reset",
            Cut::TimedOut => "after the attempt timed out",
            Cut::Killed => "after the call was killed and restarted",
        }
    }
}

/// How long a killed call ran before it was killed.
const KILLED_AFTER: Duration = Duration::from_secs(1);

/// Calls an agent makes again when a call ends `unknown` (a budget too short for the horizon says
/// so, and to call again).
const CALLS_AGAIN: usize = 2;

impl<S: SingleTool, B: BulkTool> Conformance<S, B> {
    /// The request held and applied after its caller let go, three ways: one effect each time.
    pub(super) async fn held_request(&self, scenario: Scenario) -> Verdict {
        let mut verdicts = Vec::new();
        for (run, cut) in (1..).zip([Cut::Reset, Cut::TimedOut, Cut::Killed]) {
            verdicts.push(self.held_once(scenario, run, cut).await);
        }
        let most = verdicts.iter().map(|v| v.effects_at_service).max().unwrap_or_default();
        let mut verdict = all_of(verdicts);
        verdict.effects_at_service = most;
        verdict.expected = format!(
            "applied {} after the caller let go (reset, timed out, killed): one attempt, one effect, ok \
             (called again after an unknown)",
            horizon_text(self.timing.hold)
        );
        verdict
    }

    /// One way of letting go of the held request, then calls of the same task on the same log until
    /// one is not `unknown` (as an agent told to call again would).
    async fn held_once(&self, scenario: Scenario, run: u32, cut: Cut) -> Verdict {
        let hold = self.timing.hold;
        let service = self.service();
        service.plan([Fault::Held { after: hold, reset: cut == Cut::Reset }]);
        let tap = self.tap();
        let call = || self.single.call(self.task(scenario, run, &tap), service.clone());
        if cut == Cut::Killed {
            // Dropped mid-call: its claim goes with it, its attempt stays in doubt in the log.
            let _killed = tokio::time::timeout(KILLED_AFTER, call()).await;
        }
        let mut report = call().await;
        for _ in 0..CALLS_AGAIN {
            if report.outcome != Outcome::Unknown {
                break;
            }
            report = call().await;
        }
        service.settle().await;
        let side = self.kind.has_side_effect();
        let mut expect = Expect::ok(1);
        if self.receiver_dedupes || !side {
            // Sent again at once, and harmless: the receiver keeps one by its key, or a read.
            expect.attempts = None;
        }
        if !side {
            expect.effects = None;
        }
        let mut verdict = expect.judge(scenario, self.kind, &report, &service, &tap, "");
        if !verdict.pass {
            verdict.detail = format!("{}: {}", cut.told(), verdict.detail);
        }
        let again = verdict.effects_at_service > 1;
        let denied = verdict.effect_applied == Applied::No && verdict.effects_at_service > 0;
        if side && (again || denied) {
            verdict.detail.push_str(&format!(
                "; the service applied the request {} after the caller let go, and the tool {}: declare a \
                 landing horizon at least as long as the service can hold a request (#[tool(horizon = \
                 \"...\")] or ToolSpec::horizon; the default for send, money, destructive and a create only its \
                 probe deduplicates is 5 s)",
                horizon_text(hold),
                if again { "sent it again" } else { "reported it not applied" },
            ));
        }
        verdict
    }
}
