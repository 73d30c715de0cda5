//! Running the checker, and a counterexample as a timeline a person can read.

use std::fmt;
use std::time::{Duration, Instant};

use stateright::{Checker, Expectation, Model, Path};

use crate::model::{Act, Action, Protocol, State};
use crate::state::Msg;

/// One run of the checker: what it explored, how long it took, and what it found.
pub struct Run {
    /// Unique states explored.
    pub states: usize,
    /// The deepest path explored.
    pub depth: usize,
    /// How long the run took.
    pub took: Duration,
    /// `always` properties with a counterexample: the property and the path.
    pub violations: Vec<(&'static str, Path<State, Action>)>,
    /// `sometimes` properties never reached.
    pub unreached: Vec<&'static str>,
}

/// Check `model` by breadth-first search (so each counterexample is a shortest one), and print what it
/// explored.
pub fn check(model: Protocol) -> Run {
    check_until(model, None)
}

/// [`check`], stopping at the first counterexample to `property` when one is named.
pub fn check_until(model: Protocol, property: Option<&'static str>) -> Run {
    check_with(model, property, false)
}

/// [`check_until`], depth-first when `dfs` (it keeps a path, not a frontier, so it takes far less
/// memory; its counterexamples are not the shortest). A full check uses every core; a search for one
/// counterexample uses one thread, so the path it prints is a shortest one.
pub fn check_with(model: Protocol, property: Option<&'static str>, dfs: bool) -> Run {
    check_for(model, property.as_slice(), dfs)
}

/// [`check_with`], stopping at the first counterexample to any of `properties` (none: a full check).
pub fn check_for(model: Protocol, properties: &[&'static str], dfs: bool) -> Run {
    let started = Instant::now();
    let threads = match properties {
        [] => std::thread::available_parallelism().map_or(1, |n| n.get()),
        _ => 1,
    };
    let builder = model.checker().threads(threads);
    let builder = match properties {
        [] => builder,
        names => builder.finish_when(stateright::HasDiscoveries::AnyOf(names.iter().copied().collect())),
    };
    if dfs { collect(builder.spawn_dfs(), started) } else { collect(builder.spawn_bfs(), started) }
}

/// Wait for `checker`, saying every 30 s how far it got (a long bound can then be stopped with its
/// count known), and gather what it found.
fn collect(checker: impl Checker<Protocol>, started: Instant) -> Run {
    let mut next = Duration::from_secs(30);
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(5));
        if started.elapsed() >= next {
            eprintln!(
                "  {} states so far, depth {}, {:.0?}",
                checker.unique_state_count(),
                checker.max_depth(),
                started.elapsed()
            );
            next += Duration::from_secs(30);
        }
    }
    let checker = checker.join();
    let took = started.elapsed();
    let discoveries = checker.discoveries();
    let mut run = Run {
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        took,
        violations: Vec::new(),
        unreached: Vec::new(),
    };
    for p in checker.model().properties() {
        let found = discoveries.get(p.name).cloned();
        match (p.expectation, found) {
            (Expectation::Sometimes, None) => run.unreached.push(p.name),
            (Expectation::Sometimes, Some(_)) => {}
            (_, Some(path)) => run.violations.push((p.name, path)),
            (_, None) => {}
        }
    }
    let c = checker.model().config;
    println!(
        "{:?} with {} workers, clock to {} (+{} healed), {} crash(es), {} loss(es): {} states, depth {}, {:.2?}",
        c.kind, c.workers, c.max_time, c.heal, c.crashes, c.losses, run.states, run.depth, run.took
    );
    run
}

/// A path as a timeline: one line per step, the clock, the actor and what it did.
pub fn timeline(path: &Path<State, Action>) -> String {
    let mut out = String::new();
    let states = path.clone().into_states();
    for (i, action) in path.clone().into_actions().into_iter().enumerate() {
        let now = states.get(i).map_or(0, |s| s.now);
        out.push_str(&format!("{:>3}. t={now} {action}\n", i + 1));
        if let (Some(before), Some(after)) = (states.get(i), states.get(i + 1)) {
            for (b, a) in before.workers.iter().zip(&after.workers) {
                if b.act != Act::Done && a.act == Act::Done {
                    out.push_str(&format!("       {} reports about attempt {}\n", a.owner, a.attempt()));
                }
            }
        }
    }
    if let Some(last) = states.last() {
        out.push_str(&format!(
            "     effects applied, by attempt: {:?}; reports said effect no about attempts (bits): {:#b}\n",
            last.applied, last.said_no
        ));
    }
    out
}

fn worker(w: u8) -> String {
    format!("w{}", w + 1)
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use tool_contract::probe::ProbeMark;
        let code = crate::state::code::to_outcome;
        match *self {
            Msg::Claim { who, deadline, lease } => {
                write!(f, "{who}'s claim (deadline t={deadline}, lease {lease})")
            }
            Msg::Claimed { who, got } => write!(f, "the store's answer to {who}'s claim: {got:?}"),
            Msg::Start { who, attempt, .. } => write!(f, "{who}'s start of attempt {attempt}"),
            Msg::Started { who, attempt, ok } => {
                write!(
                    f,
                    "the store's {} of {who}'s start of attempt {attempt}",
                    if ok { "yes" } else { "refusal" }
                )
            }
            Msg::End { who, attempt, outcome, effect, probe, .. } => {
                let verdict = match crate::state::code::to_probe(probe) {
                    Some(ProbeMark::Landed) => " (probe: landed)",
                    Some(ProbeMark::NotLanded) => " (probe: not landed)",
                    Some(ProbeMark::Failed) => " (probe failed)",
                    None => "",
                };
                let effect = crate::state::code::to_effect(effect);
                write!(f, "{who}'s end of attempt {attempt}: {} with effect {effect}{verdict}", code(outcome))
            }
            Msg::Ask { who, attempt, .. } => write!(f, "{who}'s question before attempt {}", attempt + 1),
            Msg::Approved { who, attempt, yes } => {
                let answer = if yes { "yes" } else { "no" };
                write!(f, "the {answer} to {who}'s question before attempt {}", attempt + 1)
            }
            Msg::Release { who } => write!(f, "{who}'s release of its claim"),
            Msg::Request { who, attempt, sent } => {
                write!(f, "{who}'s request of attempt {attempt} (sent t={sent})")
            }
            Msg::Reply { who, attempt, applied } => {
                write!(
                    f,
                    "the service's reply to {who}'s attempt {attempt}: {}",
                    if applied { "applied" } else { "503" }
                )
            }
            Msg::Settle { examined, looked: None } => {
                write!(f, "a person's settlement of attempt {examined}, as they see it")
            }
            Msg::Settle { examined, looked: Some((at, landed)) } => write!(
                f,
                "a person's settlement of attempt {examined}: {} when they looked at t={at}",
                if landed { "landed" } else { "not landed" }
            ),
            Msg::Answer { examined, yes } => write!(
                f,
                "a person's {} to the question after attempt {examined}",
                if yes { "yes" } else { "no" }
            ),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Tick => f.write_str("clock: a tick passes"),
            Action::Begin(w) => write!(f, "{}: a call begins and claims the intent", worker(*w)),
            Action::GiveUp(w) => write!(f, "{}: budget spent, reports what it knows", worker(*w)),
            Action::Crash(w) => write!(f, "{}: crashes, restarts with a new call", worker(*w)),
            Action::Suspend(w) => write!(f, "{}: suspended, its clock stands still", worker(*w)),
            Action::Timeout(w) => write!(f, "{}: stops waiting for the reply (lost)", worker(*w)),
            Action::Probe(w, mark) => write!(f, "{}: probes the service: {}", worker(*w), mark.as_str()),
            Action::ProbeLooks(w) => write!(f, "{}: probes the service, which reads it now", worker(*w)),
            Action::ProbeAnswers(w) => write!(f, "{}: the probe's verdict comes back", worker(*w)),
            Action::Wake(w) => write!(f, "{}: the horizon has passed, looks again", worker(*w)),
            Action::Deliver(m) => write!(f, "network: delivers {m}"),
            Action::Apply(m) => write!(f, "service: applies {m}; the reply arrives"),
            Action::ApplyLost(m) => write!(f, "service: applies {m}; the reply is lost"),
            Action::Refuse(m) => write!(f, "service: refuses {m} (503)"),
            Action::Drop(m) => write!(f, "network: loses {m}"),
            Action::Look => f.write_str("person: looks at the attempt in doubt, sends a settlement"),
            Action::Answer(yes) => {
                write!(f, "person: answers the waiting question {}", if *yes { "yes" } else { "no" })
            }
            Action::Reclaim(w) => write!(f, "{}: claims the intent again", worker(*w)),
            Action::Resolve => f.write_str(
                "w1: calls the intent again in a new process (a restart in doubt, or the agent's retry)",
            ),
        }
    }
}
