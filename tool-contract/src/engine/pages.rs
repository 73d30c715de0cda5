//! A paginated read: the bulk loop over pages, returning what it got when it cannot get everything.

use std::future::Future;
use std::sync::Mutex;

use super::bulk::run_parts;
use super::items::Words;
use crate::bulk::ItemId;
use crate::call::Call;
use crate::classify::{Class, Classify};
use crate::key::IntentKey;
use crate::probe::NoProbe;
use crate::report::{Item, Outcome, Report};
use crate::spec::ToolSpec;
use crate::task::Task;

const PAGES: Words =
    Words { noun: "pages", done: "read", pending: "not read, retryable", name_failure: true };

/// One page and its place in the read.
#[derive(Clone)]
struct Page<P> {
    at: usize,
    page: P,
}

impl<P: ItemId> ItemId for Page<P> {
    fn item_id(&self) -> String {
        self.page.item_id()
    }
}

/// Run a paginated read: `fetch` reads one page; the pages are read in order, and a page that fails is
/// retried, with the pages after it, within the task's budget and the tool's attempts, by the policy
/// of a read. Pages already read are never read again.
///
/// The report's `items` has one entry per page (`ok`, or why it was not read). When every page is
/// read, the outcome is `ok` and `value` holds every page's rows in page order. When some are not,
/// the read is not presented as complete: the outcome is that of the pages missing (`retryable` or
/// `permanent`), `value` holds the rows of the pages read, in order, and the message counts them and
/// names the first page missing (`"list_orders: 3 of 5 pages read; 2 not read, retryable; page-4: 503
/// from /orders"`), then why no more was tried (`"gave up after 3 attempts"`). With no page read, `value` is `null`, never an empty list.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::effect::EffectKind;
/// use tool_contract::spec::ToolSpec;
/// use tool_contract::{Class, Outcome, Task, engine};
///
/// const LIST_ORDERS: ToolSpec = ToolSpec::new("list_orders", EffectKind::Read).max_attempts(1);
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let task = Task::new("weekly-report", "agent", Duration::from_secs(30));
/// let key = task.key(&LIST_ORDERS, &"customer-9", None);
/// let pages = vec![1u32, 2, 3, 4, 5];
/// let report = engine::run_pages(&task, &LIST_ORDERS, key, pages, |_call, page: &u32| {
///     let page = *page;
///     async move {
///         match page {
///             4 => Err(Class::retryable("503 from /orders")),
///             _ => Ok(vec![format!("order-{page}a"), format!("order-{page}b")]),
///         }
///     }
/// })
/// .await;
/// assert_eq!(report.outcome, Outcome::Retryable);
/// assert_eq!(report.value.as_ref().map(Vec::len), Some(6), "pages 1 to 3, two orders each");
/// assert_eq!(
///     report.message,
///     "list_orders: 3 of 5 pages read; 2 not read, retryable; 4: 503 from /orders; gave up after 1 attempt"
/// );
/// # }
/// ```
pub async fn run_pages<P, T, E, F, Fut>(
    task: &Task,
    spec: &ToolSpec,
    key: IntentKey,
    pages: Vec<P>,
    fetch: F,
) -> Report<Vec<T>>
where
    P: Clone + ItemId,
    E: Classify,
    F: FnMut(&Call, &P) -> Fut,
    Fut: Future<Output = Result<Vec<T>, E>>,
{
    let got: Mutex<Vec<Option<Vec<T>>>> = Mutex::new(pages.iter().map(|_| None).collect());
    let fetch = Mutex::new(fetch);
    let pages: Vec<Page<P>> = pages.into_iter().enumerate().map(|(at, page)| Page { at, page }).collect();
    let read = |call: Call, due: Vec<Page<P>>| {
        let (got, fetch) = (&got, &fetch);
        async move {
            let mut items = Vec::with_capacity(due.len());
            let mut failed = false;
            for Page { at, page } in due {
                let id = page.item_id();
                if failed {
                    items.push(Item::retryable(id, "not read: a page before it failed"));
                    continue;
                }
                let next = {
                    let mut fetch = fetch.lock().unwrap_or_else(|e| e.into_inner());
                    (*fetch)(&call, &page)
                };
                match next.await {
                    Ok(rows) => {
                        got.lock().unwrap_or_else(|e| e.into_inner())[at] = Some(rows);
                        // Read, whatever becomes of the rest: a cut later in the attempt keeps it.
                        call.report_item(Item::ok(id.clone()));
                        items.push(Item::ok(id));
                    }
                    Err(err) => {
                        let class = err.classify();
                        failed = true;
                        items.push(match class.outcome() {
                            Outcome::Permanent => Item::permanent(id, class.message()),
                            _ => Item::retryable(id, class.message()),
                        });
                    }
                }
            }
            Ok::<_, Class>(items)
        }
    };
    let report = run_parts(task, spec, key, pages, read, NoProbe, PAGES).await;
    let got = got.into_inner().unwrap_or_else(|e| e.into_inner());
    let any = got.iter().any(Option::is_some);
    let rows: Vec<T> = got.into_iter().flatten().flatten().collect();
    // The value is what was read, complete or not: never an empty list for nothing read.
    let mut report = report.map(|()| Vec::new());
    report.value = any.then_some(rows);
    report
}
