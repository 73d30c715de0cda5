//! A tool on a client that holds its connection: a method taking `&self`, probed by another method
//! (`probe = Self::...` receives `&self` first).

use std::sync::Mutex;
use std::time::Duration;

use tool_contract::{Applied, Call, Class, IntentKey, Outcome, Probe, Task, tool};

/// A fake support desk whose first post of each notice loses its reply.
#[derive(Default)]
pub struct Desk {
    posted: Mutex<Vec<(IntentKey, String)>>,
}

impl Desk {
    /// Post a notice; the first attempt's reply is lost after the notice landed.
    #[tool(effect = "send", probe = Self::notice_landed, target = thread, deadline_floor = "250ms")]
    pub async fn post_notice(&self, call: &Call, thread: String, text: String) -> Result<usize, Class> {
        let mut posted = self.posted.lock().unwrap();
        posted.push((call.key(), format!("{thread}: {text}")));
        if call.attempt() == 1 {
            return Err(Class::unknown("connection reset after the request was sent"));
        }
        Ok(posted.len())
    }

    /// Find the notice carrying `key`.
    pub async fn notice_landed(&self, thread: &String, text: &String, key: IntentKey) -> Probe<usize> {
        let _ = (thread, text);
        let posted = self.posted.lock().unwrap();
        match posted.iter().position(|(k, _)| *k == key) {
            Some(i) => Probe::Landed(i + 1),
            None => Probe::NotLanded,
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let desk = Desk::default();
    let task = Task::new("ticket-5", "agent:support", Duration::from_secs(30));
    let report = desk.post_notice(&task, "thread-9".to_owned(), "refund sent".to_owned()).await;
    // The probe found the notice: no second post.
    assert_eq!((report.outcome, report.effect_applied, report.value), (Outcome::Ok, Applied::Yes, Some(1)));
    assert_eq!(desk.posted.lock().unwrap().len(), 1);
}
