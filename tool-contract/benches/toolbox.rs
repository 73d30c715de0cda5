//! Row 7 of BENCHMARKS.md: what dispatch by name costs a model's call of an `ok` read.
//!
//! `cargo bench -p tool-contract --bench toolbox`
//!
//! Both sides start from the model's arguments as a `serde_json::Value` and end with the report as
//! JSON text:
//! - `direct_plus_serde_by_hand`: the argument taken out of the object with serde_json, the
//!   `#[tool]` wrapper called directly, its `Report<u64>` serialised;
//! - `toolbox_call`: `Toolbox::call(&task, "read_price", arguments)`, its `Report<Value>` serialised.
//!
//! Each sample runs its calls in a loop inside one future (`iter_custom`), as a server does, so neither
//! side pays for criterion moving a large future per call. Under `cargo test --benches` each benchmark
//! runs once, as a check.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_contract::{Class, Outcome, Task, Toolbox, tool};

/// Read the price of one item, in cents.
#[tool(effect = "read", target = sku)]
async fn read_price(
    /// The stock-keeping unit.
    sku: String,
) -> Result<u64, Class> {
    Ok(black_box(sku.len() as u64) + 4406)
}

fn arguments() -> Value {
    json!({ "sku": "sku-1" })
}

/// The baseline: what an author writes to serve a model's call of this one tool without a toolbox.
async fn direct(task: &Task, arguments: Value) -> String {
    let Value::Object(mut fields) = arguments else { return String::new() };
    let sku: String = match fields.remove("sku").map(serde_json::from_value) {
        Some(Ok(sku)) => sku,
        _ => return String::new(),
    };
    let report = read_price(task, sku).await;
    debug_assert_eq!(report.outcome, Outcome::Ok);
    serde_json::to_string(&report).unwrap_or_default()
}

async fn through(toolbox: &Toolbox, task: &Task, arguments: Value) -> String {
    let report = match toolbox.call(task, "read_price", arguments).await {
        Ok(report) => report,
        Err(_) => return String::new(),
    };
    debug_assert_eq!(report.outcome, Outcome::Ok);
    serde_json::to_string(&report).unwrap_or_default()
}

fn row7(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a tokio runtime");
    let task = Task::new("ord-7741", "agent:pricing", Duration::from_secs(3600));
    let mut toolbox = Toolbox::new();
    toolbox.add(read_price_tool()).expect("one tool");
    let (a, b) = rt
        .block_on(async { (direct(&task, arguments()).await, through(&toolbox, &task, arguments()).await) });
    let fields = |text: &str| {
        let mut report: Value = serde_json::from_str(text).expect("a report");
        report["deadline_left_s"] = Value::Null;
        report
    };
    assert_eq!(fields(&a), fields(&b), "both sides write the same report");

    let mut group = c.benchmark_group("row7_read_call_by_name");
    group.measurement_time(Duration::from_secs(10)).sample_size(200);
    group.bench_function("direct_plus_serde_by_hand", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let task = &task;
            async move {
                let started = Instant::now();
                for _ in 0..iters {
                    black_box(direct(black_box(task), black_box(arguments())).await);
                }
                started.elapsed()
            }
        })
    });
    group.bench_function("toolbox_call", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (toolbox, task) = (&toolbox, &task);
            async move {
                let started = Instant::now();
                for _ in 0..iters {
                    black_box(through(black_box(toolbox), black_box(task), black_box(arguments())).await);
                }
                started.elapsed()
            }
        })
    });
    group.finish();
}

criterion_group!(benches, row7);
criterion_main!(benches);
