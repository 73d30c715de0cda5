//! The bounded check CI runs: the model with the crate's own rules passes every property and reaches
//! every `sometimes` (the suspension bound, which has no person, only the `always` and `eventually`
//! ones); each of eleven broken rules (a test-only substitute for one of the crate's functions: the
//! store's through `Rules`, the worker's through the engine machine's own `Hooks`) yields a
//! counterexample, printed as a timeline. Ten yield one to the harm they do (a second effect, or a
//! report of effect `no` about an attempt that applied): a "not landed" trusted early, an answer not
//! bound to its attempt, a verdict judged when its probe answered rather than when it looked (T1), a
//! budget recorded once a slow start write was done (T2), a settlement judged when it was written
//! rather than when the person saw the attempt (T3), a request let out past its deadline (T4),
//! end records accepted from any owner, the whole fence gone, a claim taken from a holder whose lease
//! still runs, and an owner id without the process's incarnation (T5). A claim granted after its
//! caller's deadline yields one to the property it breaks only: it costs liveness, never an effect
//! (docs/protocol.md says why). A debug build skips them (`cargo test --workspace`); `.ci/run` runs
//! them optimised.

use tool_contract::effect::EffectKind;
use tool_contract::journal::Phase;
use tool_contract::policy::Horizon;
use tool_contract::rules;
use tool_contract::unstable::machine::Hooks;
use tool_contract_model::properties::{
    BOUND_ANSWERS, CLAIMS_DIE_WITH_CALLER, NO_FALSE_NO, NO_OK_WITHOUT_EFFECT, NOT_LANDED_AFTER_HORIZON,
    ONE_EFFECT, OWN_RECORDS,
};
use tool_contract_model::{Config, Protocol, Rules, check, check_for, check_until, check_with, timeline};

fn passes(config: Config) {
    report(&check(Protocol { config, rules: Rules::real() }));
}

fn report(run: &tool_contract_model::Run) {
    for (name, path) in &run.violations {
        println!("{name}:\n{}", timeline(path));
    }
    assert!(run.violations.is_empty(), "{:?}", run.violations.iter().map(|v| v.0).collect::<Vec<_>>());
    assert!(run.unreached.is_empty(), "never reached: {:?}", run.unreached);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn send_passes_every_property() {
    passes(Config::ci(EffectKind::Send));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn money_passes_every_property() {
    passes(Config::ci(EffectKind::Money));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_crash_and_a_lost_message_pass_every_property() {
    passes(Config::crash(EffectKind::Send));
    passes(Config::crash(EffectKind::Money));
}

/// The deeper bound: two workers and a crash among them, searched depth-first (`cargo test -p
/// tool-contract-model --release -- --ignored`; docs/protocol.md gives its state count and time). Its
/// clock is shorter than CI's, so a takeover after a partition is not reached in it: only the
/// `always` and `eventually` properties are held to it.
#[test]
#[ignore = "the deeper bound: run with --release -- --ignored"]
fn the_deeper_bound_passes_every_property() {
    for kind in [EffectKind::Send, EffectKind::Money] {
        let run = check_with(Protocol { config: Config::deep(kind), rules: Rules::real() }, None, true);
        for (name, path) in &run.violations {
            println!("{name}:\n{}", timeline(path));
        }
        assert!(run.violations.is_empty(), "{:?}", run.violations.iter().map(|v| v.0).collect::<Vec<_>>());
    }
}

/// The checker finds a counterexample to `property` with `rules` in the loop, and prints it.
fn caught(kind: EffectKind, rules: Rules, property: &'static str) {
    let run = check_until(Protocol { config: Config::ci(kind), rules }, Some(property));
    let Some((_, path)) = run.violations.iter().find(|(name, _)| *name == property) else {
        panic!(
            "no counterexample to {property:?}; found only {:?}",
            run.violations.iter().map(|v| v.0).collect::<Vec<_>>()
        );
    };
    let steps = path.clone().into_actions().len();
    println!("counterexample to {property:?}, {steps} steps:\n{}", timeline(path));
    assert!((3..=40).contains(&steps), "{steps} steps");
}

/// The harm a broken rule does, not only the rule it restates: the checker finds a second effect, or a
/// report of `ok`/`yes` without the effect or of `no` about an attempt that applied.
fn harms(config: Config, rules: Rules) {
    let harm = [ONE_EFFECT, NO_OK_WITHOUT_EFFECT, NO_FALSE_NO];
    let run = check_for(Protocol { config, rules }, &harm, false);
    let Some((name, path)) = run.violations.iter().find(|(name, _)| harm.contains(name)) else {
        panic!(
            "no duplicate effect or false report; found only {:?}",
            run.violations.iter().map(|v| v.0).collect::<Vec<_>>()
        )
    };
    let steps = path.clone().into_actions().len();
    println!("harm: counterexample to {name:?}, {steps} steps:\n{}", timeline(path));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn end_records_accepted_from_any_owner_are_caught() {
    let mut broken = Rules::real();
    broken.fence = |holder, writer, phase, attempt, probe, highest, now| match phase {
        Phase::End => Ok(()),
        _ => rules::fence(holder, writer, phase, attempt, probe, highest, now),
    };
    caught(EffectKind::Send, broken, OWN_RECORDS);
    harms(Config::ci(EffectKind::Send), broken);
}

/// A worker suspended after its claim was granted and before its start record was sent (its clock
/// stood still while the world's ran past its lease) writes its start record after another worker has
/// taken the intent over: the fence refuses it, and no property breaks. (No person and no late probe
/// in this bound, so the `sometimes` that need them are not asked of it.)
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_worker_suspended_past_its_lease_is_fenced_out() {
    for kind in [EffectKind::Send, EffectKind::Money] {
        let run = check(Protocol { config: Config::suspended(kind), rules: Rules::real() });
        for (name, path) in &run.violations {
            println!("{name}:\n{}", timeline(path));
        }
        assert!(run.violations.is_empty(), "{:?}", run.violations.iter().map(|v| v.0).collect::<Vec<_>>());
        println!("{kind:?}: {} states, depth {}, {:?}", run.states, run.depth, run.took);
    }
}

/// The whole fence gone: the suspended worker's start record is accepted after another worker took
/// the intent over, and both send the attempt: a second effect.
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn records_accepted_from_anyone_are_caught_as_a_second_effect() {
    let mut broken = Rules::real();
    broken.fence = |_, _, _, _, _, _, _| Ok(());
    harms(Config::suspended(EffectKind::Send), broken);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn an_answer_not_bound_to_its_attempt_is_caught() {
    let mut broken = Rules::real();
    broken.answer_bound = |_, _| None;
    caught(EffectKind::Send, broken, BOUND_ANSWERS);
    // A person's "not landed" about attempt 1, recorded about attempt 2 that applied: the next call
    // reports effect `no` about it.
    harms(Config::ci(EffectKind::Send), broken);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn not_landed_trusted_before_the_horizon_is_caught() {
    static TRUSTED_AT_ONCE: Hooks<u8> = Hooks { landing: |_, _, _, _| Horizon::Passed, ..Hooks::real() };
    let broken = Rules { hooks: &TRUSTED_AT_ONCE, ..Rules::real() };
    caught(EffectKind::Send, broken, NOT_LANDED_AFTER_HORIZON);
    harms(Config::ci(EffectKind::Send), broken);
}

/// A claim granted after its caller's deadline: caught by the property it breaks, and by no harm. The
/// rule keeps the intent free for callers that can use it; a caller past its deadline that is granted
/// the claim anyway starts nothing (`rules::may_start`) and lets no request out (`Budget::may_leave`),
/// and its release follows, so what the broken rule costs is time, never an effect (docs/protocol.md
/// gives the bounds searched for harm).
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_claim_granted_after_its_callers_deadline_is_caught() {
    let mut broken = Rules::real();
    broken.claim = |holder, owner, now, _deadline| rules::claim(holder, owner, now, None);
    caught(EffectKind::Send, broken, CLAIMS_DIE_WITH_CALLER);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_verdict_judged_when_the_probe_answered_is_caught() {
    static JUDGED_WHEN_ANSWERED: Hooks<u8> =
        Hooks { verdict_seen: |_looked, answered| answered, ..Hooks::real() };
    let broken = Rules { hooks: &JUDGED_WHEN_ANSWERED, ..Rules::real() };
    harms(Config::ci(EffectKind::Send), broken);
}

/// T5, an owner id without the process's incarnation: a worker started again under its name while
/// its first process is suspended, not dead (an orchestrator that took the suspension for a death),
/// claims under the id the first one holds. The store takes the claim for a renewal, and takes the
/// first process's late start record, written once it wakes, for the new one's own: both send.
/// (Where the first process is truly dead, the crash bound, this does no harm: the restarted call
/// reads the dead call's start record, and waits out the horizon its stamp bounds.)
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_worker_started_again_under_its_name_with_its_predecessors_owner_id_is_caught() {
    let mut broken = Rules::real();
    broken.owner = |worker, _incarnation, call| tool_contract_model::Who { worker, incarnation: 0, call };
    harms(Config::suspended(EffectKind::Send), broken);
}

/// T2, an attempt's records pairing its start's stamp with the budget left once its start record was
/// written rather than at the start: a later call's horizon then ends early by as long as the write
/// took, and trusts a "not landed" while the attempt's request may still land.
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_budget_recorded_after_a_slow_start_write_is_caught() {
    static AFTER_THE_WRITE: Hooks<u8> =
        Hooks { recorded_budget: |_at_start, after_write| after_write, ..Hooks::real() };
    let broken = Rules { hooks: &AFTER_THE_WRITE, ..Rules::real() };
    harms(Config::ci(EffectKind::Send), broken);
}

/// T4, a request let out with no last check of the deadline: a worker whose start record was answered
/// past its deadline sends anyway, when its claim's lease may have run out and another worker taken the
/// intent over. The clock runs to 5: the lease outlasts the deadline by the horizon, so the send has
/// to come a tick later than CI's clock of 4 reaches.
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_request_let_out_past_its_deadline_is_caught() {
    static NO_LAST_CHECK: Hooks<u8> = Hooks { may_leave: |_now, _not_after| true, ..Hooks::real() };
    let broken = Rules { hooks: &NO_LAST_CHECK, ..Rules::real() };
    harms(Config { max_time: 5, ..Config::ci(EffectKind::Send) }, broken);
}

/// A claim taken from a holder whose lease has not run out: the new holder reads the intent and acts on
/// it as if nobody else could still send, while the holder it displaced is mid-call.
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_claim_taken_from_a_holder_whose_lease_runs_is_caught() {
    let mut broken = Rules::real();
    broken.claim = |holder, owner, now, deadline| match rules::claim(holder, owner, now, deadline) {
        rules::Claiming::Busy { .. } => rules::Claiming::Take,
        claiming => claiming,
    };
    harms(Config::ci(EffectKind::Send), broken);
}

/// T3, a person's settlement judged by when it was written rather than when they saw the attempt: a
/// person who looked while a held request could still land, and whose "not landed" reached the store
/// after it landed, is believed.
#[test]
#[cfg_attr(debug_assertions, ignore = "millions of states: run with --release, as .ci/run does")]
fn a_settlement_judged_when_it_was_written_is_caught() {
    static WHEN_WRITTEN: Hooks<u8> = Hooks { settlement_seen: |_seen, written| written, ..Hooks::real() };
    let broken = Rules { hooks: &WHEN_WRITTEN, ..Rules::real() };
    harms(Config::crash(EffectKind::Send), broken);
}
