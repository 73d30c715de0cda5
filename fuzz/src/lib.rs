//! Fuzzing on the stable toolchain: every parser of tool-contract that takes outside input, driven by
//! a mutation engine with per-target seeds and dictionaries.
//!
//! No nightly compiler is available, so there is no coverage instrumentation (`cargo fuzz` needs
//! `-Zsanitizer`). The runner steers instead by *behaviour*: each target returns a signature of what
//! the input made the parser do (which error, how many records and warnings, which outcome), and an
//! input with a signature not seen before joins the corpus, so later mutations start from it. Inputs
//! are mutated bytes (flips, dictionary tokens, splices, repeats up to size bombs) and, for JSON
//! targets, generated values of any shape and depth.
//!
//! What counts as a failure:
//! - a panic (caught, the input saved under `fuzz/crashes/`);
//! - a hang: one execution longer than [`Limits::hang`] (the watchdog aborts and prints the target);
//! - an unbounded allocation: one execution growing the heap by more than [`Limits::growth`], or any
//!   single request over [`alloc::HARD_CAP`] (refused; the input is printed before the abort).
//!
//! Each crash becomes a file under `fuzz/regressions/<target>/`, which `cargo test -p
//! tool-contract-fuzz` replays for ever after.

pub mod alloc;
pub mod mutate;
pub mod targets;

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use mutate::{Rng, RngExt};

/// One parser under test.
pub trait Target {
    /// Its name, as `--target` takes it and as its regression folder is named.
    fn name(&self) -> &'static str;
    /// Inputs to start from: valid ones, and the edge cases already known.
    fn seeds(&self) -> Vec<Vec<u8>>;
    /// Tokens the mutator inserts: the grammar's words.
    fn dictionary(&self) -> &'static [&'static [u8]];
    /// How many executions of every 100 go to this target (slow targets get fewer).
    fn weight(&self) -> u32 {
        10
    }
    /// A fresh input made from scratch rather than by mutation, when the target knows its structure.
    fn generate(&self, _rng: &mut Rng) -> Option<Vec<u8>> {
        None
    }
    /// Runs the parser on `input`; panics on a broken invariant. Returns a signature of what happened.
    fn run(&mut self, input: &[u8]) -> u64;
}

/// Every target.
pub fn all() -> Vec<Box<dyn Target>> {
    targets::all()
}

/// What a run may spend on one execution.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longer than this, an execution is a hang.
    pub hang: Duration,
    /// More heap growth than this in one execution is an unbounded allocation.
    pub growth: usize,
    /// The longest input the mutator makes.
    pub max_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { hang: Duration::from_secs(10), growth: 256 << 20, max_len: 64 << 10 }
    }
}

/// What happened to one target.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// The target's name.
    pub name: &'static str,
    /// Executions.
    pub execs: u64,
    /// Distinct behaviours seen.
    pub behaviours: usize,
    /// Inputs in the corpus at the end.
    pub corpus: usize,
    /// Failures, each with where its input was saved.
    pub failures: Vec<String>,
    /// Time spent.
    pub elapsed: Duration,
}

/// Runs the targets for `runs` executions in total, shared by weight, from `seed`.
pub fn fuzz(
    targets: &mut [Box<dyn Target>],
    runs: u64,
    seed: u64,
    limits: Limits,
    crashes: &Path,
) -> Vec<Tally> {
    let total_weight: u64 = targets.iter().map(|t| u64::from(t.weight())).sum::<u64>().max(1);
    let started = Arc::new(AtomicU64::new(u64::MAX));
    let name = Arc::new(std::sync::Mutex::new(""));
    watchdog(Arc::clone(&started), Arc::clone(&name), limits.hang);
    let clock = Instant::now();
    let mut tallies = Vec::new();
    let mut given = 0;
    let count = targets.len();
    for (index, target) in targets.iter_mut().enumerate() {
        // Shares by weight, rounded down; the last target takes what rounding left, so the run makes
        // exactly `runs` executions.
        let share =
            if index + 1 == count { runs - given } else { runs * u64::from(target.weight()) / total_weight };
        given += share;
        *name.lock().unwrap_or_else(|e| e.into_inner()) = target.name();
        let mut rng = Rng::new(seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        tallies.push(fuzz_one(target.as_mut(), share, &mut rng, limits, crashes, &started, &clock));
    }
    started.store(u64::MAX, Ordering::Relaxed);
    tallies
}

fn fuzz_one(
    target: &mut dyn Target,
    runs: u64,
    rng: &mut Rng,
    limits: Limits,
    crashes: &Path,
    started: &AtomicU64,
    clock: &Instant,
) -> Tally {
    let begun = Instant::now();
    let mut corpus = target.seeds();
    corpus.extend(regressions(target.name()));
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let dictionary = target.dictionary();
    let mut seen = HashSet::new();
    let mut tally = Tally { name: target.name(), ..Tally::default() };
    for n in 0..runs {
        let input = if (n as usize) < corpus.len() {
            corpus[n as usize].clone()
        } else if rng.below(8) == 0
            && let Some(generated) = target.generate(rng)
        {
            generated
        } else {
            let base = &corpus[rng.below(corpus.len() as u64) as usize];
            let other = &corpus[rng.below(corpus.len() as u64) as usize];
            mutate::mutate(base, other, dictionary, rng, limits.max_len)
        };
        started.store(clock.elapsed().as_millis() as u64, Ordering::Relaxed);
        alloc::reset_peak();
        let before = alloc::live();
        let outcome = alloc::running(&input, || catch_unwind(AssertUnwindSafe(|| target.run(&input))));
        started.store(u64::MAX, Ordering::Relaxed);
        let growth = alloc::peak().saturating_sub(before);
        tally.execs += 1;
        match outcome {
            Ok(signature) => {
                if growth > limits.growth {
                    let path = save(crashes, target.name(), "alloc", &input);
                    tally.failures.push(format!("heap grew by {growth} bytes on {}", path.display()));
                } else if seen.insert(signature) && corpus.len() < 4096 && (n as usize) >= corpus.len() {
                    corpus.push(input);
                }
            }
            Err(panic) => {
                let path = save(crashes, target.name(), "panic", &input);
                tally.failures.push(format!("panicked ({}) on {}", panic_text(&panic), path.display()));
            }
        }
    }
    tally.behaviours = seen.len();
    tally.corpus = corpus.len();
    tally.elapsed = begun.elapsed();
    tally
}

/// Aborts the process when one execution runs past `hang`, naming the target: a hang cannot be caught.
fn watchdog(started: Arc<AtomicU64>, name: Arc<std::sync::Mutex<&'static str>>, hang: Duration) {
    let clock = Instant::now();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let at = started.load(Ordering::Relaxed);
            let now = clock.elapsed().as_millis() as u64;
            if at != u64::MAX && now.saturating_sub(at) > hang.as_millis() as u64 {
                let target = *name.lock().unwrap_or_else(|e| e.into_inner());
                eprintln!("fuzz: hang: one execution of `{target}` ran past {hang:?}");
                std::process::exit(3);
            }
        }
    });
}

/// The panic's message, cut to 300 characters: a parser that echoes its input echoes it here too.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a non-text panic".to_owned()
    };
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn save(crashes: &Path, target: &str, kind: &str, input: &[u8]) -> PathBuf {
    let path = crashes.join(format!("{target}-{kind}-{:016x}", mutate::fnv(input)));
    let _ = std::fs::create_dir_all(crashes);
    let _ = std::fs::write(&path, input);
    path
}

/// The folder of a target's regression inputs.
pub fn regression_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions").join(target)
}

/// The inputs that once broke a target; each is replayed first, by every run and by the tests.
pub fn regressions(target: &str) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(regression_dir(target)) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    files.into_iter().filter_map(|path| std::fs::read(path).ok()).collect()
}
