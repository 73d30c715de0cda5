//! The console's pages, rendered on the server: every text from the log (task ids, messages, a
//! settlement's evidence) is escaped by construction (maud escapes every `(expr)`), so a page shows
//! what an operator typed as text, never as markup. No JavaScript: every action is a form.

use std::time::SystemTime;

use maud::{DOCTYPE, Markup, PreEscaped, html};
use tool_contract::journal::inspect::Stored;
use tool_contract::{
    journal::{ApprovalStep, Phase, Recall, Record},
    unstable::parse_rfc3339,
};

use crate::index::WORDS;

/// The most intents a list shows on one page.
pub const MAX_ROWS: usize = 500;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:72em;color:#1b1b1b}\
a{color:#0b57d0}table{border-collapse:collapse;margin:.5em 0 1em}td,th{border-bottom:1px solid #ddd;\
padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f4f4f4}.doubt{color:#b3261e;font-weight:600}\
.ok{color:#146c2e}.muted{color:#666}form.settle{border:1px solid #ccc;padding:.8em;margin:1em 0;max-width:40em}\
textarea{width:100%;min-height:4em}.notice{background:#fff4e5;border:1px solid #f0c36d;padding:.5em .8em}\
code{font-size:12px}";

/// A whole page around `body`, for a browser logged in (it has a button to log out).
fn page(title: &str, base: &str, body: Markup) -> Markup {
    page_of(title, base, true, body)
}

/// A whole page around `body`; with a button to log out when `logged_in`.
fn page_of(title: &str, base: &str, logged_in: bool, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="referrer" content="same-origin";
                title { (title) " · tool-contract console" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                nav {
                    a href={ (base) "/" } { "Overview" }
                    @if logged_in {
                        " "
                        form.logout method="post" action={ (base) "/logout" } style="display:inline" {
                            button type="submit" { "Log out" }
                        }
                    }
                }
                (body)
            }
        }
    }
}

/// The page asking for the token, for a browser without the console's cookie; `why` the last try
/// failed, if it did.
pub fn token_prompt(base: &str, why: Option<&str>) -> Markup {
    page_of(
        "Token",
        base,
        false,
        html! {
            h1 { "This console needs its token" }
            @if let Some(why) = why { p.notice { (why) } }
            p { "Open the address the console printed when it started (it logs in once), or paste your token here." }
            form method="post" action={ (base) "/login" } {
                label { "Token " input type="password" name="token" autocomplete="off"; }
                " " button type="submit" { "Open" }
            }
        },
    )
}

/// The page of the printed address: a button that logs in with its one-time ticket.
pub fn ticket_prompt(base: &str, ticket: &str) -> Markup {
    page_of(
        "Log in",
        base,
        false,
        html! {
            h1 { "Log in to the console" }
            p { "This address logs in once. Log in here only if you opened the address the console printed." }
            form method="post" action={ (base) "/login" } {
                input type="hidden" name="ticket" value=(ticket);
                button type="submit" autofocus { "Log in" }
            }
        },
    )
}

/// Words a tool or its service wrote (a message, the history a question tells), as a person's form
/// shows them: quoted, cut to [`tool_contract::unstable::cut`]'s length, and labelled as the tool's,
/// so a service's reply cannot pass for the console's own advice.
fn tools_words(text: &str) -> Markup {
    html! {
        @if !text.is_empty() { span.tool title="written by the tool or its service, not checked by anyone" {
            span.muted { "the tool said: " }
            q { (tool_contract::unstable::cut(text)) }
        } }
    }
}

/// A plain page saying what went wrong.
pub fn problem(title: &str, why: &str, base: &str) -> Markup {
    page(title, base, html! { h1 { (title) } p { (why) } })
}

fn age(started: &str, now: SystemTime) -> String {
    let Some(at) = parse_rfc3339(started) else { return "?".into() };
    let secs = now.duration_since(at).map_or(0, |d| d.as_secs());
    match secs {
        0..=119 => format!("{secs}s"),
        120..=7199 => format!("{}m", secs / 60),
        7200..=172_799 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

fn word(recall: &Recall) -> String {
    tool_contract::rules::last_word_in_words(recall)
}

fn intents_table(recalls: &[&Recall], now: SystemTime, base: &str) -> Markup {
    html! {
        table {
            tr { th { "age" } th { "tool" } th { "task" } th { "intent" } th { "attempts" } th { "last word" } th { "message" } }
            @for recall in recalls {
                @let last = &recall.last;
                tr {
                    td { (age(&last.started, now)) }
                    td { (last.call) }
                    td { a href={ (base) "/task/" (encode(&last.task)) } { (last.task) } }
                    td { a href={ (base) "/intent/" (last.intent_key) } { code { (last.intent_key) } } }
                    td { (recall.attempts) }
                    td class=(if recall.is_unresolved() { "doubt" } else { "ok" }) { (word(recall)) }
                    td { (tool_contract::unstable::cut(last.message.as_deref().unwrap_or(""))) }
                }
            }
        }
    }
}

/// What the overview shows, from whichever store.
pub struct Overview {
    /// The oldest intents in doubt (at most a page of them).
    pub doubt: Vec<Recall>,
    /// How many intents are in doubt in all.
    pub doubt_total: usize,
    /// The questions waiting for a person's answer before a next `money` attempt, oldest first.
    pub pending: Vec<Record>,
    /// What ended lately.
    pub recent: crate::index::Recent,
    /// A line on the store: how many intents and records, what was skipped.
    pub totals: String,
}

/// The overview: the questions waiting for an answer and the intents in doubt first, then what ended
/// lately, and search. `answering` says whether the approval forms are shown.
pub fn overview(
    view: &Overview,
    now: SystemTime,
    found: Option<(&str, Vec<&Recall>)>,
    settling: &Settling<'_>,
) -> Markup {
    let base = settling.base;
    let doubt: Vec<&Recall> = view.doubt.iter().take(MAX_ROWS).collect();
    let recent = &view.recent;
    page(
        "Overview",
        base,
        html! {
            h1 { "Attempt log" }
            form method="get" action={ (base) "/" } {
                label { "Task id or key prefix " input type="search" name="q" value=(found.as_ref().map_or("", |f| f.0)); }
                " " button type="submit" { "Find" }
            }
            @if let Some((q, recalls)) = &found {
                h2 { "Found for " code { (q) } }
                @if recalls.is_empty() { p.muted { "Nothing." } } @else { (intents_table(&recalls[..recalls.len().min(MAX_ROWS)], now, base)) }
            }
            @if let Some(said) = settling.said { p.notice { (said) } }
            h2 class="doubt" { "Waiting for approval: " (view.pending.len()) }
            @if view.pending.is_empty() {
                p.muted { "No call waits for a person's approval." }
            } @else {
                p { "A call of a " code { "money" } " tool waits for a yes or a no before its next attempt. Oldest first." }
                table {
                    tr { th { "asked" } th { "tool" } th { "task" } th { "intent" } th { "attempt" } th { "so far" } th { "waits until" } th { "answer" } }
                    @for asked in &view.pending {
                        @let note = asked.approval.as_ref();
                        tr {
                            td { (age(note.map_or("", |n| n.at.as_str()), now)) }
                            td { (asked.call) }
                            td { a href={ (base) "/task/" (encode(&asked.task)) } { (asked.task) } }
                            td { a href={ (base) "/intent/" (asked.intent_key) } { code { (asked.intent_key) } } }
                            td { (asked.attempt + 1) }
                            td { (note.map_or("", |n| n.why.as_str())) }
                            td { (note.and_then(|n| n.until.as_deref()).unwrap_or("")) }
                            td { (answer_form(asked, settling)) }
                        }
                    }
                }
            }
            h2 class="doubt" { "In doubt: " (view.doubt_total) }
            @if doubt.is_empty() {
                p.muted { "No intent is in doubt." }
            } @else {
                p { "Oldest first. An intent is in doubt when its last attempt never ended, or ended with its effect unknown: open it to see its timeline and settle it." }
                (intents_table(&doubt, now, base))
                @if view.doubt_total > doubt.len() {
                    p.muted { "and " (view.doubt_total - doubt.len()) " more; settle the oldest first, or search by task." }
                }
            }
            h2 { "Intents by their last word, last 24 hours" }
            p.muted { "Each intent counted once, in the hour its last attempt started." }
            (chart(&recent.hours))
            div style="display:flex;gap:3em" {
                div { h3 { "Last hour" } (counts_table(&recent.hour)) }
                div { h3 { "Last day" } (counts_table(&recent.day)) }
            }
            p.muted { (view.totals) }
        },
    )
}

fn counts_table(counts: &std::collections::BTreeMap<(String, &'static str), u32>) -> Markup {
    let mut tools: Vec<&str> = counts.keys().map(|(tool, _)| tool.as_str()).collect();
    tools.dedup();
    html! {
        @if counts.is_empty() { p.muted { "None." } } @else {
            table {
                tr { th { "tool" } @for word in WORDS { th { (word) } } }
                @for tool in &tools {
                    tr {
                        td { (tool) }
                        @for word in WORDS {
                            td { (counts.get(&((*tool).to_owned(), word)).copied().unwrap_or(0)) }
                        }
                    }
                }
            }
        }
    }
}

/// Stacked bars per hour of the last day, by last word.
fn chart(hours: &[[u32; WORDS.len()]]) -> Markup {
    const COLORS: [&str; WORDS.len()] =
        ["#2e7d32", "#f9a825", "#6d4c41", "#c62828", "#8e24aa", "#1565c0", "#00838f"];
    let top = hours.iter().map(|h| h.iter().sum::<u32>()).max().unwrap_or(0).max(1);
    let (width, height, bar) = (24 * 22, 120u32, 18u32);
    // Each bar's pieces, stacked from the bottom: x, y, height, outcome, count.
    let mut pieces = Vec::new();
    for (i, hour) in hours.iter().enumerate() {
        let x = 30 + i as u32 * 22;
        let mut y = height;
        for (k, &n) in hour.iter().enumerate() {
            let h = (u64::from(n) * u64::from(height - 10) / u64::from(top)) as u32;
            if h > 0 {
                pieces.push((x, y - h, h, k, n));
                y -= h;
            }
        }
    }
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(width + 40) height=(height + 30) role="img" aria-label="calls ended per hour, by outcome" {
            @for (x, y, h, k, n) in &pieces {
                rect x=(x) y=(y) width=(bar) height=(h) fill=(COLORS[*k]) { title { (n) " " (WORDS[*k]) } }
            }
            text x="0" y="24" font-size="10" { (top) }
            text x="0" y=(height) font-size="10" { "0" }
            text x="30" y=(height + 20) font-size="10" { "24h ago" }
            text x=(width - 10) y=(height + 20) font-size="10" { "now" }
            @for (k, word) in WORDS.iter().enumerate() {
                rect x=(70 + k as u32 * 78) y="0" width="10" height="10" fill=(COLORS[k]) {}
                text x=(84 + k as u32 * 78) y="9" font-size="10" { (word) }
            }
        }
    }
}

/// The approve and deny form for the question `asked`, or a note on a read-only console.
fn answer_form(asked: &Record, settling: &Settling<'_>) -> Markup {
    html! {
        @if settling.read_only {
            span.muted { "read-only" }
        } @else {
            form.approval method="post" action={ (settling.base) "/intent/" (asked.intent_key) "/approval" } {
                input type="hidden" name="attempt" value=(asked.attempt + 1);
                label { "Why (required) " input type="text" name="why" required maxlength="1024" size="28"; }
                " "
                button type="submit" name="decision" value="approve" { "Approve attempt " (asked.attempt + 1) }
                " "
                button type="submit" name="decision" value="deny" { "Deny" }
                br; span.muted { "answered by " (settling.by) }
            }
        }
    }
}

/// The approval among `records` still waiting at `now` for an operator's answer (the last approval
/// record, a question about the attempt after the intent's highest, not past its `until`).
fn waiting<'a>(recall: &Recall, records: &[&'a Record], now: SystemTime) -> Option<&'a Record> {
    let last = records.iter().rev().find(|r| !tool_contract::rules::counts_as_attempt(r.phase)).copied();
    tool_contract::rules::waiting_approval(last, recall.attempts, &tool_contract::unstable::rfc3339(now))
}

/// A task's intents, in order.
pub fn task(recalls: &[Recall], task: &str, now: SystemTime, base: &str) -> Markup {
    let recalls: Vec<&Recall> = recalls.iter().take(MAX_ROWS).collect();
    page(
        task,
        base,
        html! {
            h1 { "Task " code { (task) } }
            @if recalls.is_empty() { p.muted { "The log holds nothing of this task." } } @else { (intents_table(&recalls, now, base)) }
        },
    )
}

/// What a settle form may do on this page.
pub struct Settling<'a> {
    /// The console is read-only: no form.
    pub read_only: bool,
    /// Who settles, as the console was started.
    pub by: &'a str,
    /// What the last action said, shown at the top.
    pub said: Option<&'a str>,
    /// Where the console is mounted (`""` at the root).
    pub base: &'a str,
}

/// How long the attempt (or probe) an end record tells of took: from its start to when the store took
/// the record, where the store says (PostgreSQL does; a file log records no time of writing).
fn took(stored: &Stored) -> Option<String> {
    let record = &stored.record;
    if record.phase != Phase::End {
        return None;
    }
    let (started, written) = (parse_rfc3339(&record.started)?, parse_rfc3339(stored.written_at.as_deref()?)?);
    Some(format!("{}s", written.duration_since(started).map_or(0, |d| d.as_secs())))
}

/// An intent's page: its timeline, drawn, then each record, the approval form when a call waits for
/// one, and the settle form when it is in doubt.
pub fn intent(recall: &Recall, stored: &[Stored], settling: &Settling<'_>, now: SystemTime) -> Markup {
    let records: Vec<&Record> = stored.iter().map(|s| &s.record).collect();
    let records = records.as_slice();
    let timed = stored.iter().any(|s| s.written_at.is_some());
    let last = &recall.last;
    let base = settling.base;
    page(
        &last.call,
        base,
        html! {
            h1 { (last.call) " " code { (last.intent_key) } }
            p { "Task " a href={ (base) "/task/" (encode(&last.task)) } { (last.task) } ", " (recall.attempts) " attempt(s), last word: "
                span class=(if recall.is_unresolved() { "doubt" } else { "ok" }) { (word(recall)) } }
            @if let Some(said) = settling.said { p.notice { (said) } }
            (timeline(records))
            table {
                tr { th { "attempt" } th { "record" } th { "started" } th { "budget left" } th { "took" } th { "outcome" } th { "effect" } th { "message" } }
                @for each in stored {
                    @let record = &each.record;
                    tr {
                        td { "a" (record.attempt) }
                        td { (kind(record)) }
                        td { (record.started) @if let Some(owner) = &each.owner { br; span.muted { "by " (owner) } } }
                        td { (record.budget_left_s) "s" }
                        td { (took(each).unwrap_or_default()) }
                        td { (record.outcome.map_or("", |o| o.as_str())) }
                        td { (record.effect_applied.map_or("", |a| a.as_str())) }
                        td {
                            @let message = tool_contract::unstable::cut(record.message.as_deref().unwrap_or(""));
                            @match (&record.settled, &record.approval) {
                                (Some(s), _) => {
                                    (message) (os_user(s.os_user.as_deref()))
                                    br; span.muted { "evidence: " (tool_contract::unstable::cut(&s.evidence)) }
                                }
                                (None, Some(n)) => {
                                    (message) (os_user(n.os_user.as_deref()))
                                    br; span.muted { (n.step.as_str()) " by " (n.by) " at " (n.at) ": " (tool_contract::unstable::cut(&n.why)) }
                                }
                                (None, None) => { (tools_words(record.message.as_deref().unwrap_or(""))) }
                            }
                            @if let Some(at) = &record.retry_at { br; span.muted { "retry at " (at) } }
                        }
                    }
                }
            }
            p.muted {
                "The log never holds a call's arguments."
                @if !timed { " A file log records when each attempt started, not when it ended: how long one took is shown for a PostgreSQL store, whose rows carry when they were written." }
            }
            @if let Some(asked) = waiting(recall, records, now) {
                div.settle {
                    h2 { "A call waits for approval of attempt " (asked.attempt + 1) }
                    p { (tools_words(asked.approval.as_ref().map_or("", |n| n.why.as_str()))) }
                    (answer_form(asked, settling))
                }
            }
            @if recall.is_unresolved() {
                @if settling.read_only {
                    p.muted { "This console is read-only." }
                } @else {
                    form.settle method="post" action={ (base) "/intent/" (last.intent_key) "/settle" } {
                        h2 { "Settle attempt " (last.attempt_id) }
                        input type="hidden" name="attempt" value=(last.attempt);
                        // When this page showed the attempt: a `not_landed` is judged by when the
                        // person saw it, not when the form reached the log.
                        input type="hidden" name="shown" value=(tool_contract::unstable::rfc3339(now));
                        p { "Say what you found in the world. Landed: later calls answer ok from it and nothing is repeated. Not landed: the next call makes the next attempt, once this one could no longer land (given sooner, that call probes it again first)." }
                        p {
                            label { input type="radio" name="verdict" value="landed" required; " landed" } " "
                            label { input type="radio" name="verdict" value="not_landed"; " not landed" }
                        }
                        p { label { "Evidence (what you saw, and where; required, at most 1 KiB)" br; textarea name="evidence" required maxlength="1024" {} } }
                        p { "Settled by " strong { (settling.by) } " via operator." }
                        button type="submit" { "Settle" }
                    }
                }
            }
        },
    )
}

/// Who really wrote a person's word, where the store knows it (the operating-system user that wrote
/// a request file): beside the `by` it claims.
fn os_user(os_user: Option<&str>) -> Markup {
    html! { @if let Some(user) = os_user { " " span.muted { "(written by " (user) ")" } } }
}

fn kind(record: &Record) -> String {
    match (record.phase, record.probe) {
        (Phase::Start, _) => "start".into(),
        (Phase::Settled, _) => "settled".into(),
        (Phase::Approval, _) => match &record.approval {
            Some(note) => format!("{}: {}", note.asks.as_str(), note.step.as_str()),
            None => "approval".into(),
        },
        (Phase::End, Some(mark)) => format!("probe: {}", mark.as_str()),
        (Phase::End, None) => "end".into(),
        (phase, _) => phase.as_str().into(),
    }
}

/// The records drawn on a line, one mark each, in log order: starts hollow, ends filled by outcome,
/// probes as diamonds, a settlement as a square.
fn timeline(records: &[&Record]) -> Markup {
    let step = 90u32;
    let width = 40 + step * records.len().max(1) as u32;
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(width) height="110" role="img" aria-label="the intent's timeline" {
            // SVG elements are closed explicitly: inside `svg`, an HTML parser takes `<line>` for an open element.
            line x1="20" y1="40" x2=(width - 20) y2="40" stroke="#999" stroke-width="2" {}
            @for (i, record) in records.iter().enumerate() {
                @let x = 40 + i as u32 * step;
                @let color = match record.outcome.map(|o| o.as_str()) {
                    Some("ok") => "#2e7d32", Some("retryable") => "#f9a825", Some("permanent") => "#6d4c41",
                    Some(_) => "#c62828", None => "#fff",
                };
                @match (record.phase, record.probe) {
                    (Phase::Start, _) => { circle cx=(x) cy="40" r="8" fill="#fff" stroke="#333" stroke-width="2" {} }
                    (Phase::Settled, _) => { rect x=(x - 9) y="31" width="18" height="18" fill=(color) stroke="#000" stroke-width="2" {} }
                    (Phase::Approval, _) => {
                        @let fill = match record.approval.as_ref().map(|n| n.step) {
                            Some(ApprovalStep::Approved) => "#2e7d32", Some(ApprovalStep::Denied) => "#c62828", _ => "#fff",
                        };
                        polygon points={ (x - 9) ",49 " (x) ",31 " (x + 9) ",49" } fill=(fill) stroke="#333" stroke-width="2" {}
                    }
                    (Phase::End, Some(_)) => { polygon points={ (x) ",29 " (x + 11) ",40 " (x) ",51 " (x - 11) ",40" } fill=(color) stroke="#333" {} }
                    (Phase::End, None) => { circle cx=(x) cy="40" r="8" fill=(color) stroke="#333" {} }
                    _ => { circle cx=(x) cy="40" r="8" fill="#fff" stroke="#999" stroke-width="2" {} }
                }
                text x=(x) y="70" font-size="11" text-anchor="middle" { "a" (record.attempt) " " (kind(record)) }
                text x=(x) y="86" font-size="10" text-anchor="middle" fill="#666" { (when(record).get(11..19).unwrap_or("")) }
            }
        }
    }
}

/// When a record was written, as far as it says: a person's record its own time, an attempt's
/// record the attempt's start.
fn when(record: &Record) -> &str {
    match (&record.approval, &record.settled) {
        (Some(note), _) => &note.at,
        (None, Some(settled)) => &settled.at,
        (None, None) => &record.started,
    }
}

/// `text` for a URL path segment.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
