//! The support_desk example, run as a process, on a `--log` file another process holds: it waits for the
//! log within `--log-wait`, saying so once, and serves once the holder lets go, or gives up naming how
//! long it waited.

use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tool_contract::FileJournal;

/// The example's binary, which `cargo test` builds beside this test's.
fn support_desk(args: &[&str]) -> Child {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let path: PathBuf = dir.join("examples").join(format!("support_desk{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p tool-contract-mcp` (or `cargo build -p tool-contract-mcp --examples`) first",
        path.display()
    );
    Command::new(path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("support_desk started")
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tc-log-wait-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn log(&self) -> String {
        self.0.join("attempts.log").display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Read standard error until it holds `what`, or panic after ten seconds with what it held.
fn read_until(child: &mut Child, what: &str) -> String {
    let stderr = child.stderr.as_mut().unwrap();
    let (mut text, mut buf, began) = (String::new(), [0u8; 512], Instant::now());
    while !text.contains(what) {
        assert!(began.elapsed() < Duration::from_secs(10), "no {what:?} in:\n{text}");
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "standard error closed without {what:?}:\n{text}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    text
}

#[test]
fn a_server_waits_for_a_held_log_says_so_once_and_serves_once_it_is_free() {
    let dir = Scratch::new("serves");
    let holder = FileJournal::open(dir.log()).unwrap();
    let mut desk = support_desk(&["--log", &dir.log(), "--log-wait", "20"]);
    let said = read_until(&mut desk, "open by another process");
    assert!(
        said.contains(&format!("waiting up to 20s for {}, open by another process", dir.log())),
        "{said}"
    );
    drop(holder);
    let said = said + &read_until(&mut desk, "support_desk: instance");
    assert_eq!(said.matches("waiting up to").count(), 1, "{said}");
    // Standard input closed before any request: the stdio server ends (a failure, no initialize
    // request came), and lets go of the log.
    drop(desk.stdin.take());
    desk.wait().unwrap();
    drop(FileJournal::open(dir.log()).expect("free once the server exits"));
}

#[test]
fn a_server_gives_up_on_a_held_log_after_its_bound_naming_how_long_it_waited() {
    let dir = Scratch::new("gives-up");
    let _holder = FileJournal::open(dir.log()).unwrap();
    let began = Instant::now();
    let mut desk = support_desk(&["--log", &dir.log(), "--log-wait", "1"]);
    let mut said = String::new();
    desk.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    let status = desk.wait().unwrap();
    assert!(!status.success(), "{said}");
    assert!(began.elapsed() >= Duration::from_secs(1), "{:?}", began.elapsed());
    assert_eq!(said.matches("waiting up to 1s for").count(), 1, "{said}");
    assert!(said.contains("is open by another process") && said.contains("(waited 1."), "{said}");
}

/// The instance id a server's standard error names, once it says it.
fn instance_of(args: &[&str]) -> (String, String) {
    let mut desk = support_desk(args);
    let mut said = read_until(&mut desk, "(the task of calls that name none)");
    drop(desk.stdin.take());
    desk.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    desk.wait().unwrap();
    let id = said.split("support_desk: instance ").nth(1).unwrap().split(' ').next().unwrap().to_owned();
    (id, said)
}

#[test]
fn a_file_log_keeps_the_instance_id_so_a_restart_is_the_same_intent() {
    let dir = Scratch::new("instance");
    let log = dir.log();
    let (first, said) = instance_of(&["--log", &log]);
    assert!(said.contains(&format!("kept in {log}.instance")), "{said}");
    // Restarted on the same log: the same task, so the same call is the same intent.
    let (second, said) = instance_of(&["--log", &log]);
    assert_eq!(first, second, "{said}");
    assert_eq!(fs::read_to_string(format!("{log}.instance")).unwrap().trim(), first);
    // Without a log, nothing is kept, and the message says so; --instance-id wins over a kept one.
    let (third, said) = instance_of(&[]);
    assert!(third != first && said.contains("nothing is kept"), "{said}");
    let (named, _) = instance_of(&["--log", &log, "--instance-id", "desk-7"]);
    assert_eq!(named, "desk-7");
    // A kept file that is not an id is refused, not replaced.
    fs::write(format!("{log}.instance"), "\n").unwrap();
    let mut desk = support_desk(&["--log", &log]);
    let mut said = String::new();
    desk.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    assert!(!desk.wait().unwrap().success() && said.contains("not an instance id"), "{said}");
}
