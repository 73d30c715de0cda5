//! The properties the checker holds the model to (docs/protocol.md lists them with their meaning).

use stateright::Property;
use tool_contract::effect::EffectKind;

use crate::model::{Config, Protocol, State, ghost};

/// At most one effect per intent; for `money`, every effect after the first follows a person's yes
/// to the question before that attempt.
pub const ONE_EFFECT: &str = "at most one effect per intent (money: each further one approved)";
/// No report `ok` or effect `yes` unless the service applied the effect.
pub const NO_OK_WITHOUT_EFFECT: &str = "no report ok/yes without the effect";
/// No report with effect `no` about an attempt the service applied.
pub const NO_FALSE_NO: &str = "no report with effect no when its attempt applied";
/// A record about attempt n is accepted only from its starter, or as the holder's probe verdict on
/// the highest attempt.
pub const OWN_RECORDS: &str = "records about an attempt only from its starter or the holder's probe";
/// Attempt numbers only grow, and an attempt id names one attempt (one start, one sender).
pub const ONE_ATTEMPT_PER_ID: &str = "attempt numbers only grow and an attempt id names one attempt";
/// A person's answer is recorded only about the attempt it names, at most one per attempt.
pub const BOUND_ANSWERS: &str = "a person's word is recorded only about the attempt it names, once";
/// A "not landed" is acted on only once the attempt it is about can no longer land.
pub const NOT_LANDED_AFTER_HORIZON: &str = "a not landed is acted on only once the attempt cannot land";
/// A claim blocks the intent no longer than its caller's deadline plus its lease.
pub const CLAIMS_DIE_WITH_CALLER: &str = "no claim is granted to a caller past its deadline";

/// Reachability: an intent done after a lost reply.
pub const DONE_AFTER_LOST_REPLY: &str = "sometimes: done after a lost reply";
/// Reachability: a takeover after a partition (the former holder's late record refused).
pub const TAKEOVER: &str = "sometimes: a takeover after a partition";
/// Reachability: a settlement honoured by a later call.
pub const SETTLEMENT_HONOURED: &str = "sometimes: a settlement honoured";
/// Reachability: an approved second `money` attempt applied.
pub const APPROVED_SECOND: &str = "sometimes: an approved second money attempt";
/// Liveness: with the network healed and probes answering, the intent leaves doubt (checked where
/// each path of the healed phase ends).
pub const LEAVES_DOUBT: &str = "eventually: healed, the intent leaves doubt";

fn one_effect(m: &Protocol, s: &State) -> bool {
    if m.config.kind == EffectKind::Money {
        // Each further effect approved, and none of one attempt twice: one approval is one payment.
        let once = s.applied.iter().enumerate().all(|(i, a)| !s.applied[..i].contains(a));
        once && s.applied.iter().skip(1).all(|&a| a >= 1 && s.approvals & (1 << (a - 1).min(7)) != 0)
    } else {
        s.applied.len() <= 1
    }
}

fn flag(s: &State, bit: u32) -> bool {
    s.ghost & bit != 0
}

/// Where a path of the healed phase ends (nothing more can happen), the intent is out of doubt.
/// Stateright checks an `eventually` property where a path ends; this one holds only there, so a
/// state two paths join at cannot carry one path's success to the other.
fn left_doubt(m: &Protocol, s: &State) -> bool {
    if !m.healed(s) || s.word.is_some_and(|w| w.in_doubt()) {
        return false;
    }
    let mut next = Vec::new();
    stateright::Model::actions(m, s, &mut next);
    next.is_empty()
}

/// Every property of a model of a tool of kind `kind` (and `eventually` with a healed phase).
pub fn all(config: &Config) -> Vec<Property<Protocol>> {
    let kind = config.kind;
    let mut all = vec![
        Property::always(ONE_EFFECT, one_effect),
        Property::always(NO_OK_WITHOUT_EFFECT, |_, s: &State| !flag(s, ghost::OK_WITHOUT_EFFECT)),
        Property::always(NO_FALSE_NO, |_, s: &State| {
            s.applied.iter().all(|&a| s.said_no & (1 << a.min(7)) == 0)
        }),
        Property::always(OWN_RECORDS, |_, s: &State| !flag(s, ghost::FOREIGN_RECORD)),
        Property::always(ONE_ATTEMPT_PER_ID, |_, s: &State| !flag(s, ghost::TWO_ATTEMPTS | ghost::SHRANK)),
        Property::always(BOUND_ANSWERS, |_, s: &State| !flag(s, ghost::UNBOUND)),
        Property::always(NOT_LANDED_AFTER_HORIZON, |_, s: &State| !flag(s, ghost::ACTED_EARLY)),
        Property::always(CLAIMS_DIE_WITH_CALLER, |_, s: &State| !flag(s, ghost::LATE_CLAIM)),
        Property::sometimes(DONE_AFTER_LOST_REPLY, |_, s: &State| flag(s, ghost::OK_AFTER_LOST_REPLY)),
        Property::sometimes(TAKEOVER, |_, s: &State| flag(s, ghost::TAKEOVER)),
        Property::sometimes(SETTLEMENT_HONOURED, |_, s: &State| flag(s, ghost::SETTLEMENT_HONOURED)),
    ];
    if kind == EffectKind::Money {
        all.push(Property::sometimes(APPROVED_SECOND, |_, s: &State| s.applied.iter().any(|&a| a >= 2)));
    }
    if config.heal > 0 {
        all.push(Property::eventually(LEAVES_DOUBT, left_doubt));
    }
    all
}
