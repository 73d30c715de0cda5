//! The figures the docs quote that the code defines: each doc says what the constant is, so a change to
//! one without the other fails here. And the shape of what a reader scans first: the README's chapter
//! table in the reading order of docs/README.md, and one short line per row in BENCHMARKS.md's table.

use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `text` with its line breaks as spaces, so a phrase wrapped across lines is found.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `n` written with thousands separators, as the docs write numbers.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_docs_quote_the_limits_the_code_sets() {
    let console = flat(&read("docs/console.md"));
    let unknown = flat(&read("docs/unknown.md"));
    let quoted = [
        (&console, format!("at most {} connections at once", tool_contract_console::MAX_CONNECTIONS)),
        (&console, format!("{} rounds", grouped(u64::from(tool_contract_console::TOKEN_ROUNDS)))),
        (&console, format!("pbkdf2-sha256:{}:", tool_contract_console::TOKEN_ROUNDS)),
        (&console, format!("after {} minutes unused", tool_contract_console::IDLE_TIMEOUT.as_secs() / 60)),
        (
            &console,
            format!("{} hours after its login", tool_contract_console::SESSION_LIFETIME.as_secs() / 3600),
        ),
        (
            &unknown,
            format!("at most {} s past its `--wait`", tool_contract::journal::file::TAKEN_GRACE.as_secs()),
        ),
        (
            &unknown,
            format!(
                "at most {} KiB (`MAX_ANSWER_BYTES`)",
                tool_contract::journal::file::MAX_ANSWER_BYTES / 1024
            ),
        ),
        (
            &unknown,
            format!(
                "regular files of at most {} KiB",
                tool_contract::journal::file::MAX_REQUEST_BYTES / 1024
            ),
        ),
        (
            &unknown,
            format!(
                "never longer than {} minutes",
                tool_contract::journal::file::REQUEST_LIFETIME.as_secs() / 60
            ),
        ),
    ];
    for (doc, phrase) in quoted {
        assert!(doc.contains(&phrase), "the doc does not say {phrase:?}");
    }
}

#[test]
fn the_readme_lists_the_chapters_in_the_reading_order() {
    let links = |text: &str, prefix: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| {
                let at = line.find("](")? + 2;
                let end = line[at..].find(')')? + at;
                let target = line[at..end].trim_start_matches(prefix).to_owned();
                (target.ends_with(".md") && !target.contains("README")).then_some(target)
            })
            .collect()
    };
    let order: Vec<String> = links(&read("docs/README.md"), "")
        .into_iter()
        .filter(|t| !t.contains("CONTRIBUTING"))
        .map(|t| t.trim_start_matches("../").to_owned())
        .collect();
    let readme = read("README.md");
    let table = &readme[readme.find("| chapter |").expect("the chapter table")..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let listed: Vec<String> = links(table, "docs/").into_iter().filter(|t| order.contains(t)).collect();
    let in_order: Vec<String> = order.iter().filter(|t| listed.contains(t)).cloned().collect();
    assert_eq!(listed, in_order, "README.md's chapters, against docs/README.md's order");
    assert_eq!(listed.len(), order.len(), "every chapter of docs/README.md in README.md: {listed:?}");
}

#[test]
fn each_row_of_the_benchmarks_table_is_one_short_line() {
    let benchmarks = read("BENCHMARKS.md");
    let table = &benchmarks[benchmarks.find("## Current figures").expect("the section")..];
    let rows: Vec<&str> =
        table.lines().skip_while(|l| !l.starts_with("| row")).take_while(|l| l.starts_with('|')).collect();
    assert!(rows.len() > 10, "{rows:?}");
    for row in &rows[2..] {
        let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
        assert_eq!(cells.len(), rows[0].trim_matches('|').split('|').count(), "{row}");
        for cell in cells {
            assert!(
                cell.len() <= 160,
                "a cell of {} bytes; the history holds the reasoning: {cell}",
                cell.len()
            );
        }
    }
}
