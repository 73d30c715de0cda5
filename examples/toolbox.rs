//! The six example tools (one per effect kind) in one `Toolbox`, as a model reaches them: their
//! definitions, and a call by name with JSON arguments.
//!
//! ```text
//! cargo run -q -p tool-contract-examples --example toolbox -- definitions [--format mcp|openai|anthropic]
//! cargo run -q -p tool-contract-examples --example toolbox -- call NAME 'JSON-ARGS' [--task T]
//! ```
//!
//! `definitions` prints one JSON array; `call` runs one call against the examples' in-memory fakes and
//! prints its report. A name no tool has, or arguments that are not JSON, exit with status 2.
#![warn(clippy::pedantic)]

// The tools are the per-kind examples themselves; their own `main` and test are not used here.
#[allow(dead_code)]
#[path = "tools/charge_card.rs"]
mod charge_card;
#[allow(dead_code)]
#[path = "tools/create_order.rs"]
mod create_order;
#[allow(dead_code)]
#[path = "tools/delete_record.rs"]
mod delete_record;
#[allow(dead_code)]
#[path = "tools/read_price.rs"]
mod read_price;
#[allow(dead_code)]
#[path = "tools/send_notice.rs"]
mod send_notice;
#[allow(dead_code)]
#[path = "tools/write_rows.rs"]
mod write_rows;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tool_contract::define::Format;
use tool_contract::{Task, Toolbox};

const USAGE: &str = "usage: toolbox definitions [--format mcp|openai|anthropic]\n       toolbox call NAME 'JSON-ARGS' [--task T]";

/// Every example tool, registered one line each.
fn toolbox() -> Result<Toolbox, tool_contract::toolbox::DuplicateTool> {
    let mut toolbox = Toolbox::new();
    toolbox.add(read_price::read_price_tool())?;
    toolbox.add(create_order::create_order_tool())?;
    toolbox.add(send_notice::post_notice_tool())?;
    toolbox
        .add_method(Arc::new(charge_card::Payments::default()), charge_card::Payments::charge_card_tool())?;
    toolbox.add(delete_record::delete_record_tool())?;
    toolbox.add(write_rows::write_rows_tool())?;
    Ok(toolbox)
}

/// `--flag value` among `args`, removed from them.
fn flag(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    let Some(at) = args.iter().position(|arg| arg == name) else { return Ok(None) };
    if at + 1 >= args.len() {
        return Err(format!("{name} needs a value"));
    }
    let value = args.remove(at + 1);
    args.remove(at);
    Ok(Some(value))
}

async fn run(mut args: Vec<String>) -> Result<String, String> {
    let toolbox = toolbox().map_err(|error| error.to_string())?;
    let format = flag(&mut args, "--format")?;
    let task = flag(&mut args, "--task")?.unwrap_or_else(|| "toolbox-demo".to_owned());
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["definitions"] => {
            let format = format.as_deref().unwrap_or("mcp").parse::<Format>()?;
            Ok(pretty(&toolbox.definitions_as(format)))
        }
        ["call", name, arguments] => {
            let arguments: serde_json::Value = serde_json::from_str(arguments)
                .map_err(|error| format!("the arguments are not JSON: {error}"))?;
            let task = Task::new(task, "agent:toolbox", Duration::from_secs(30));
            let report = toolbox.call(&task, name, arguments).await.map_err(|error| error.to_string())?;
            Ok(pretty(&report))
        }
        _ => Err(USAGE.to_owned()),
    }
}

fn pretty<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolbox: {error}");
            ExitCode::from(2)
        }
    }
}
