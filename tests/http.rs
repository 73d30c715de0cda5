//! The six scenarios and the held request over real HTTP on 127.0.0.1: a reqwest client against the loopback fake, whose
//! faults happen at the socket (a connection closed after the effect was applied, a reply held back).
//! Real clock, short figures ([`Timing::REAL`]).

use tool_contract::effect::EffectKind;
use tool_contract_testing::{Conformance, Scenario, Timing, Verdict};
use tool_contract_tests::http_tools::{post, write_rows};

fn assert_pass(verdicts: &[Verdict]) {
    for v in verdicts {
        assert!(v.pass, "{}: {v:?}", v.scenario);
    }
}

#[tokio::test]
async fn send_passes_the_six_and_the_held_request_over_http() {
    let kind = EffectKind::Send;
    let verdicts = Conformance::new(kind, move |t, s| post(kind, t, s))
        .bulk(move |t, s, rows| write_rows(kind, t, s, rows))
        .timing(Timing::REAL)
        .run()
        .await;
    assert_pass(&verdicts);
    assert_eq!(verdicts.len(), 7);
}

#[tokio::test]
async fn a_connection_closed_after_applying_is_unknown_until_probed() {
    let kind = EffectKind::Destructive;
    let verdict = Conformance::new(kind, move |t, s| post(kind, t, s))
        .timing(Timing::REAL)
        .run_one(Scenario::KillMidCall)
        .await;
    assert!(verdict.pass, "{verdict:?}");
    assert_eq!((verdict.attempts, verdict.effects_at_service), (1, 1));
}
