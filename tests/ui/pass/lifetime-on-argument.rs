//! Borrowed arguments: a named lifetime and an elided one, and optional ones. Each attempt copies the
//! reference, not the data.

use std::time::Duration;

use tool_contract::{Call, Class, IntentKey, Outcome, Probe, Task, tool};

/// Count the words of a document section.
#[tool(effect = "read", target = doc)]
pub async fn count_words<'a>(call: &Call, doc: &'a str, section: &str) -> Result<usize, Class> {
    let _ = call;
    Ok(doc.split_whitespace().count() + section.len())
}

/// Count the words of a document section, the section optional.
#[tool(effect = "read", target = doc)]
pub async fn count_section<'a>(doc: &'a str, section: Option<&'a str>, skip: Option<&[u32]>) -> Result<usize, Class> {
    let _ = skip;
    Ok(doc.split_whitespace().count() + section.map_or(0, str::len))
}

/// Finds the reply carrying `key`: a probe takes each argument by reference, as typed.
pub async fn reply_landed(thread: &&str, quote: &Option<&str>, key: IntentKey) -> Probe<u64> {
    let _ = (thread, quote, key);
    Probe::NotLanded
}

/// Reply in a thread, quoting a line when one is given.
#[tool(effect = "send", probe = reply_landed, target = thread)]
pub async fn reply(thread: &str, quote: Option<&str>) -> Result<u64, Class> {
    Ok((thread.len() + quote.map_or(0, str::len)) as u64)
}

/// The same tool in a `&self` method with its own lifetime.
pub struct Library<'d> {
    /// The only document.
    pub doc: &'d str,
}

impl<'d> Library<'d> {
    /// Count the words of the document whose title is `title`.
    #[tool(effect = "read", target = title)]
    pub async fn words<'t>(&self, title: &'t str) -> Result<usize, Class> {
        let _ = title;
        Ok(self.doc.split_whitespace().count())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let task = Task::new("doc-1", "agent", Duration::from_secs(5));
    let text = String::from("one two three");
    let report = count_words(&task, &text, "").await;
    assert_eq!((report.outcome, report.value), (Outcome::Ok, Some(3)));

    assert_eq!(count_section(&task, &text, Some("ab"), None).await.value, Some(5));
    let _ = count_section_tool();
    assert_eq!(reply(&task, "th-1", Some("ok")).await.value, Some(6));
    let _ = reply_tool();

    let library = Library { doc: &text };
    let title = String::from("intro");
    assert_eq!(library.words(&task, &title).await.value, Some(3));
}
