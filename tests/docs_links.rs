//! Every relative link in the docs resolves: `docs/*.md`, `README.md`, `CONTRIBUTING.md` and
//! `BENCHMARKS.md`, read at run time from the workspace root. A link's file (or directory) must exist,
//! and a `#anchor` into a Markdown file must be the GitHub slug of one of its headings. Links to other
//! sites (`https:`, `mailto:`) are not followed, and text inside code blocks and code spans is not read.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// The files whose links are checked, relative to the workspace root.
fn checked_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        ["README.md", "CONTRIBUTING.md", "BENCHMARKS.md"].iter().map(PathBuf::from).collect();
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("docs/ lists").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| path.strip_prefix(root).expect("under the root").to_path_buf())
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files = checked_files(&root);
    assert!(files.len() > 4, "the docs were found: {files:?}");
    let load = |path: &Path| -> Option<String> {
        let full = root.join(path);
        if full.is_dir() {
            return Some(String::new());
        }
        match path.extension() {
            Some(ext) if ext == "md" => std::fs::read_to_string(full).ok(),
            _ => full.exists().then(String::new),
        }
    };
    let mut broken = Vec::new();
    let mut links = 0;
    for file in &files {
        let text = load(file).unwrap_or_else(|| panic!("{} is readable", file.display()));
        let found = links_of(&text);
        links += found.len();
        broken.extend(check(file, &found, &load));
    }
    assert!(links > 10, "links were found: {links}");
    assert!(broken.is_empty(), "{} broken links:\n{}", broken.len(), broken.join("\n"));
}

/// A link as written: the line it is on and its target.
#[derive(Debug, PartialEq)]
struct Link {
    line: usize,
    target: String,
}

/// The problems of `file`'s links; `load` gives a path's text (Markdown), an empty string for another
/// file or a directory, and `None` for a path that does not exist.
fn check(file: &Path, links: &[Link], load: &dyn Fn(&Path) -> Option<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for link in links {
        if let Err(why) = resolve(file, &link.target, load) {
            problems.push(format!("{}:{}: ({}) {why}", file.display(), link.line, link.target));
        }
    }
    problems
}

/// Whether one link of `file` resolves; `Err` says why not.
fn resolve(file: &Path, target: &str, load: &dyn Fn(&Path) -> Option<String>) -> Result<(), String> {
    if is_external(target) {
        return Ok(());
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let target_path = if path.is_empty() {
        file.to_path_buf()
    } else {
        let joined = file.parent().unwrap_or(Path::new("")).join(path.replace("%20", " "));
        normalise(&joined).ok_or_else(|| "leaves the repository".to_owned())?
    };
    let text = load(&target_path).ok_or_else(|| format!("{} does not exist", target_path.display()))?;
    let Some(anchor) = anchor else { return Ok(()) };
    if target_path.extension().is_none_or(|ext| ext != "md") {
        // A line anchor into source (`#L10`) is GitHub's, not the file's: the file exists.
        return Ok(());
    }
    if slugs(&text).iter().any(|slug| slug == anchor) {
        Ok(())
    } else {
        Err(format!("{} has no heading `#{anchor}`", target_path.display()))
    }
}

/// A link to another site, or to no file at all.
fn is_external(target: &str) -> bool {
    let scheme = target.split_once(':').map(|(scheme, _)| scheme);
    scheme.is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)))
}

/// `a/b/../c` as `a/c`; `None` for a path above the root.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => parts.push(name),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// The links of a Markdown text outside code blocks and code spans: inline `[text](target)` and
/// `![alt](target)`, and reference definitions `[name]: target`.
fn links_of(text: &str) -> Vec<Link> {
    let mut links = Vec::new();
    let mut fence: Option<String> = None;
    for (at, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect());
            continue;
        }
        let prose = without_code_spans(line);
        if let Some(rest) = prose.trim_start().strip_prefix('[')
            && let Some((_, definition)) = rest.split_once("]: ")
        {
            links.push(Link { line: at + 1, target: clean(definition) });
            continue;
        }
        let mut rest = prose.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            links.push(Link { line: at + 1, target: clean(&after[..end]) });
            rest = &after[end + 1..];
        }
    }
    links
}

/// A target without its title (`path "title"`) and angle brackets.
fn clean(target: &str) -> String {
    let target = target.trim();
    let target = target.split_whitespace().next().unwrap_or("");
    target.trim_start_matches('<').trim_end_matches('>').to_owned()
}

/// A line with its code spans (a run of backticks to the next run of as many) removed.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        let mut j = i + run;
        let mut closed = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let other = chars[j..].iter().take_while(|c| **c == '`').count();
                if other == run {
                    closed = Some(j + other);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => i = end,
            None => {
                // An unclosed run is literal text.
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The anchors GitHub gives a Markdown text's headings, in order, a repeated one suffixed `-1`, `-2`.
fn slugs(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect());
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let count = seen.entry(base.clone()).or_insert(0);
        out.push(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
        *count += 1;
    }
    out
}

/// GitHub's anchor of a heading: its text (a link's text, not its target), lowercased, with every
/// character but letters, digits, `-`, `_` and spaces dropped and each space a `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` reads as `text`.
    while let Some(start) = rest.find('[') {
        let Some(mid) = rest[start..].find("](") else { break };
        let Some(end) = rest[start + mid..].find(')') else { break };
        text.push_str(&rest[..start]);
        text.push_str(&rest[start + 1..start + mid]);
        rest = &rest[start + mid + end + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("One writer at a time"), "one-writer-at-a-time");
    assert_eq!(slug("Who can log in, and for how long"), "who-can-log-in-and-for-how-long");
    assert_eq!(slug("Over MCP: `tool-contract-mcp`"), "over-mcp-tool-contract-mcp");
    assert_eq!(slug("What `isError` says"), "what-iserror-says");
    assert_eq!(slug("Approving a `money` retry"), "approving-a-money-retry");
    assert_eq!(slug("See [the log](attempt-log.md) here"), "see-the-log-here");
    assert_eq!(slugs("# A\n## A\n```\n# not a heading\n```\n### A b\n#no"), ["a", "a-1", "a-b"]);
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "See [x](a.md) and `[y](b.md)`.\n```text\n[z](c.md)\n```\n![i](d.png \"t\")\n[r]: e.md\n";
    let targets: Vec<String> = links_of(text).into_iter().map(|link| link.target).collect();
    assert_eq!(targets, ["a.md", "d.png", "e.md"]);
}

#[test]
fn a_broken_link_or_anchor_is_reported() {
    let files: BTreeMap<PathBuf, String> = [
        ("docs/a.md", "# A\n\n## One writer at a time\n"),
        ("docs/img.png", ""),
        ("BENCHMARKS.md", "# Benchmarks\n"),
    ]
    .into_iter()
    .map(|(path, text)| (PathBuf::from(path), text.to_owned()))
    .collect();
    let load = |path: &Path| files.get(path).cloned();
    let file = Path::new("docs/b.md");
    let good = [
        "a.md",
        "a.md#one-writer-at-a-time",
        "img.png",
        "../BENCHMARKS.md#benchmarks",
        "https://example.org/x.md#y",
        "./a.md#a",
    ];
    for target in good {
        assert_eq!(resolve(file, target, &load), Ok(()), "{target}");
    }
    let bad = [
        ("docs/FLEET.md", "docs/docs/FLEET.md does not exist"),
        ("a.md#one-writer", "docs/a.md has no heading `#one-writer`"),
        ("../../outside.md", "leaves the repository"),
        ("#nowhere", "docs/b.md does not exist"),
    ];
    for (target, why) in bad {
        assert_eq!(resolve(file, target, &load), Err(why.to_owned()), "{target}");
    }
    let links = links_of("[fleet](docs/FLEET.md) and [ok](a.md)\n");
    let problems = check(file, &links, &load);
    assert_eq!(problems, ["docs/b.md:1: (docs/FLEET.md) docs/docs/FLEET.md does not exist"]);
}
