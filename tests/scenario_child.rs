//! The agent process the crash scenarios kill (`crash_scenarios.rs` beside this file).
//!
//! ```text
//! scenario-child URL LOG TASK single|bulk
//! ```
//!
//! Makes one call of the HTTP `send` tool (`single`) or of the bulk one (`bulk`, items `row-1`..`row-5`)
//! against the loopback fake at `URL`, in task `TASK` with a 30 s budget, writing ahead to the file log
//! at `LOG`, then prints the report as one JSON line. The parent kills it mid-call and runs it again.

use std::sync::Arc;
use std::time::Duration;

use tool_contract::effect::EffectKind;
use tool_contract::task::EscalationQueue;
use tool_contract::{FileJournal, Task};
use tool_contract_tests::http_tools::{post_at, write_rows_at};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, log, task, shape] = args.as_slice() else {
        eprintln!("usage: scenario-child URL LOG TASK single|bulk");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let line = runtime.block_on(async {
        let journal = Arc::new(FileJournal::open(log).expect("the attempt log opens"));
        let escalations = EscalationQueue::new();
        let task = Task::new(task.as_str(), "agent:crash", Duration::from_secs(30))
            .journal(journal)
            .escalate_to(escalations.clone());
        let client = reqwest::Client::new();
        let report = match shape.as_str() {
            "single" => serde_json::to_value(post_at(EffectKind::Send, &task, &client, url).await),
            _ => {
                let rows = (1..=5).map(|i| format!("row-{i}")).collect();
                serde_json::to_value(write_rows_at(EffectKind::Send, &task, &client, url, rows).await)
            }
        };
        serde_json::json!({ "report": report.expect("a report serialises"), "escalations": escalations.len() })
    });
    println!("{line}");
}
