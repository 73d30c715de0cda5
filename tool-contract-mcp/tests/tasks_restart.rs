//! An MCP task survives its server: the support_desk example, run as a process over a file log, is
//! killed (SIGKILL) while a task it created is open; a new process on the same log serves the task
//! by its id, drives it to its report, and the notice is posted once.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams, Implementation,
    ProtocolVersion, RequestMetaObject, TaskPayload, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ClientServiceExt};
use serde_json::{Map, Value, json};
use tokio::process::{Child, Command};
use tool_contract_mcp::TASK_META_KEY;

/// A 2026-07-28 client that declares the tasks extension.
#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("restart", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }
}

/// The example's binary, which `cargo test` builds beside this test's.
fn support_desk() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let path = dir.join("examples").join(format!("support_desk{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "{} is missing: run `cargo test -p tool-contract-mcp` first", path.display());
    path
}

/// A support_desk process on `log` (with `--fault lost-notice` when `faulty`) and a client of it.
async fn start(log: &str, faulty: bool) -> (Child, RunningService<RoleClient, Client>) {
    let mut args = vec!["--log", log, "--budget-s", "20"];
    if faulty {
        args.extend(["--fault", "lost-notice"]);
    }
    let mut child = Command::new(support_desk())
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("support_desk starts");
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let mode = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = Client.serve_with_lifecycle((stdout, stdin), mode).await.expect("the client connects");
    (child, client)
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut meta = Map::new();
    meta.insert(TASK_META_KEY.to_owned(), json!("ticket-restart"));
    let mut params =
        CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.as_object().unwrap().clone());
    params.meta = Some(RequestMetaObject::from(meta));
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_survives_its_server_killed_and_is_driven_to_its_report_by_the_next() {
    let dir = std::env::temp_dir().join(format!("tc-task-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("attempts.log").display().to_string();

    // The first attempt is lost on the way and the probe cannot read the thread: in doubt, a task.
    let (mut first, client) = start(&log, true).await;
    let post = call("post_notice", json!({ "thread": "thread-9", "text": "your refund is on its way" }));
    let CallToolResponse::Task(created) = client.call_tool_once(post).await.unwrap() else {
        panic!("a notice in doubt is answered with a task")
    };
    let id = created.task.task_id;
    let got = client.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(got.task.status(), TaskStatus::Working);
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    drop(client);

    // The next process on the log, its thread list readable again, serves the task by the same id.
    let (_second, client) = start(&log, false).await;
    let mut done = None;
    for _ in 0..300 {
        let got =
            client.get_task(GetTaskParams::new(&id)).await.expect("the restarted server knows the task");
        if got.task.status().is_terminal() {
            done = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = done.expect("the task ends within thirty seconds of the restart");
    let TaskPayload::Completed { result } = &done.task.payload else { panic!("{done:?}") };
    let report = &result["structuredContent"];
    assert_eq!(
        (report["outcome"].as_str(), report["effect_applied"].as_str()),
        (Some("ok"), Some("yes")),
        "{report}"
    );
    let CallToolResponse::Complete(listed) =
        client.call_tool_once(call("list_notices", json!({ "thread": "thread-9" }))).await.unwrap()
    else {
        panic!("a read answers at once")
    };
    let notices = &listed.structured_content.unwrap()["value"];
    assert_eq!(notices.as_array().map(Vec::len), Some(1), "one notice, posted once: {notices}");
    let _ = std::fs::remove_dir_all(&dir);
}
