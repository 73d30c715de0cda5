//! Every saved regression input and every seed, through every target: none may panic.

#[global_allocator]
static ALLOC: tool_contract_fuzz::alloc::Counting = tool_contract_fuzz::alloc::Counting;

#[test]
fn regressions_and_seeds_pass() {
    for mut target in tool_contract_fuzz::all() {
        let mut inputs = target.seeds();
        inputs.extend(tool_contract_fuzz::regressions(target.name()));
        assert!(!inputs.is_empty(), "{} has no seeds", target.name());
        for input in inputs {
            target.run(&input);
        }
    }
}

#[test]
fn a_short_run_finds_new_behaviours_and_no_failure() {
    let mut targets = tool_contract_fuzz::all();
    let starts: Vec<usize> =
        targets.iter().map(|t| t.seeds().len() + tool_contract_fuzz::regressions(t.name()).len()).collect();
    let crashes = std::env::temp_dir().join("tool-contract-fuzz-test-crashes");
    let tallies =
        tool_contract_fuzz::fuzz(&mut targets, 20_000, 7, tool_contract_fuzz::Limits::default(), &crashes);
    for (tally, start) in tallies.iter().zip(starts) {
        assert!(tally.failures.is_empty(), "{}: {:?}", tally.name, tally.failures);
        // Mutants reach behaviours the seeds alone do not show, and join the corpus.
        assert!(tally.corpus > start, "{}: corpus {} from {start} seeds", tally.name, tally.corpus);
    }
    assert_eq!(tallies.iter().map(|t| t.execs).sum::<u64>(), 20_000, "exactly the executions asked for");
}

#[test]
fn a_panicking_target_is_caught_and_its_input_saved() {
    struct Fragile;
    impl tool_contract_fuzz::Target for Fragile {
        fn name(&self) -> &'static str {
            "fragile"
        }
        fn seeds(&self) -> Vec<Vec<u8>> {
            vec![b"ok".to_vec()]
        }
        fn dictionary(&self) -> &'static [&'static [u8]] {
            &[b"boom"]
        }
        fn run(&mut self, input: &[u8]) -> u64 {
            assert!(!input.windows(4).any(|w| w == b"boom"), "found the bomb");
            input.len() as u64
        }
    }
    let crashes = std::env::temp_dir().join(format!("tool-contract-fuzz-fragile-{}", std::process::id()));
    let mut targets: Vec<Box<dyn tool_contract_fuzz::Target>> = vec![Box::new(Fragile)];
    std::panic::set_hook(Box::new(|_| {}));
    let tallies =
        tool_contract_fuzz::fuzz(&mut targets, 5_000, 3, tool_contract_fuzz::Limits::default(), &crashes);
    let _ = std::panic::take_hook();
    assert!(!tallies[0].failures.is_empty(), "the bomb is in the dictionary; 5,000 mutants must find it");
    let saved: Vec<_> = std::fs::read_dir(&crashes).unwrap().collect();
    assert!(!saved.is_empty());
    let _ = std::fs::remove_dir_all(&crashes);
}
