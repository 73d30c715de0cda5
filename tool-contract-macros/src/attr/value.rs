//! The value of each key of `#[tool]`, checked where it was written.

use super::*;

pub(super) fn parse_effect(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<Kind> {
    let parsed = string(ctxt, EFFECT, &value).and_then(|lit| {
        let text = lit.value();
        let kind = Kind::ALL.into_iter().find(|kind| kind.as_str() == text);
        if kind.is_none() {
            let names: Vec<String> = Kind::ALL.iter().map(|kind| format!("\"{}\"", kind.as_str())).collect();
            let hint = match Kind::ALL.into_iter().find(|kind| kind.as_str().eq_ignore_ascii_case(&text)) {
                Some(kind) => format!("write `effect = \"{}\"`", kind.as_str()),
                None => format!("use one of {}", names.join(", ")),
            };
            ctxt.error_spanned_by(&lit, format!("`effect = {}` is not an effect kind; {hint}", lit.token()));
        }
        kind
    });
    Given { key, value, parsed }
}

/// A duration key: `deadline_floor` or `probe_reserve`, in milliseconds.
pub(super) fn parse_duration(ctxt: &Ctxt, key: Key, ident: Ident, value: Expr) -> Given<u64> {
    let parsed = match &value {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => {
            let digits = int.base10_digits();
            let message = format!(
                "`{} = {int}` has no unit; write `{} = \"{digits}s\"` or `\"{digits}ms\"` (the units are {})",
                key.name,
                key.name,
                duration::UNITS
            );
            ctxt.error_spanned_by(&value, message);
            None
        }
        _ => string(ctxt, key, &value).and_then(|lit| {
            let millis = duration::millis(&lit.value());
            if millis.is_none() {
                let message = format!(
                    "`{} = {}` is not a duration; write a whole number and a unit, like \"250ms\", \"2s\", \"1m\" or \"1h\" (the units are {})",
                    key.name,
                    lit.token(),
                    duration::UNITS
                );
                ctxt.error_spanned_by(&lit, message);
            }
            millis
        }),
    };
    Given { key: ident, value, parsed }
}

pub(super) fn parse_attempts(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<u32> {
    let parsed = match &value {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => {
            let attempts = int.base10_parse::<u32>().ok().filter(|n| (1..=MAX_ATTEMPTS_LIMIT).contains(n));
            if attempts.is_none() {
                let message = if int.base10_digits() == "0" {
                    "`max_attempts = 0` would never call the tool; the first attempt counts: write at least `max_attempts = 1`".to_owned()
                } else {
                    format!(
                        "`max_attempts = {int}` is too many: past {MAX_ATTEMPTS_LIMIT} attempts a retry loop hammers a service that is down; the task's budget ends a call anyway, so write a number from 1 to {MAX_ATTEMPTS_LIMIT}"
                    )
                };
                ctxt.error_spanned_by(int, message);
            }
            attempts
        }
        Expr::Lit(ExprLit { lit: Lit::Str(lit), .. }) if lit.value().parse::<u32>().is_ok() => {
            let message = format!(
                "`max_attempts = {}` is a number; drop the quotes: `max_attempts = {}`",
                lit.token(),
                lit.value()
            );
            ctxt.error_spanned_by(lit, message);
            None
        }
        _ => {
            let message = format!(
                "`max_attempts = {}` must be a whole number, the first attempt included, like `{}`",
                written(&value),
                MAX_ATTEMPTS.example
            );
            ctxt.error_spanned_by(&value, message);
            None
        }
    };
    Given { key, value, parsed }
}

pub(super) fn parse_backoff(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<(u64, u64)> {
    let parsed = string(ctxt, BACKOFF, &value).and_then(|lit| {
        let text = lit.value();
        let problem = match duration::range(&text) {
            Ok(range) => return Some(range),
            Err(duration::RangeError::NoCap) => match duration::millis(&text) {
                Some(_) => format!("has no cap; write the first wait and the longest: `backoff = \"{text}..5s\"`"),
                None => "is not a range of durations; write the first wait and the longest, like `backoff = \"200ms..5s\"`".to_owned(),
            },
            Err(duration::RangeError::First) | Err(duration::RangeError::Cap) => format!(
                "is not a range of durations; write the first wait and the longest, like `backoff = \"200ms..5s\"` (the units are {})",
                duration::UNITS
            ),
            Err(duration::RangeError::Reversed) => {
                "starts above its cap; the first wait doubles up to the cap: write the shorter one first".to_owned()
            }
        };
        ctxt.error_spanned_by(&lit, format!("`backoff = {}` {problem}", lit.token()));
        None
    });
    Given { key, value, parsed }
}

pub(super) fn parse_verb(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<LitStr> {
    let parsed = string(ctxt, VERB, &value).filter(|lit| {
        let text = lit.value();
        let problem = if text.is_empty() {
            Some("is empty; name the act, or remove `verb` to use the function's name")
        } else if text.contains('|') {
            Some("contains `|`, which separates the parts of the intent key; choose a verb without it")
        } else {
            None
        };
        if let Some(problem) = problem {
            ctxt.error_spanned_by(lit, format!("`verb = {}` {problem}", lit.token()));
        }
        problem.is_none()
    });
    Given { key, value, parsed }
}

pub(super) fn parse_name(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<LitStr> {
    let parsed = string(ctxt, NAME, &value).filter(|lit| match name_problem(&lit.value()) {
        Some(problem) => {
            ctxt.error_spanned_by(lit, format!("`name = {}` {problem}", lit.token()));
            false
        }
        None => true,
    });
    Given { key, value, parsed }
}

/// What keeps `name` from being a tool name under MCP's rules: 1 to 128 of `A-Z a-z 0-9 _ . -`.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty; a model calls a tool by its name: write one, like `post_notice`".to_owned());
    }
    if name.chars().count() > MAX_NAME {
        return Some(format!(
            "is {} characters long; a tool name has at most {MAX_NAME} (at most 64 for OpenAI and Anthropic)",
            name.chars().count()
        ));
    }
    let bad: String =
        name.chars().filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))).collect();
    if bad.is_empty() {
        return None;
    }
    let mut seen = Vec::new();
    let shown: Vec<String> = bad
        .chars()
        .filter(|c| {
            !seen.contains(c) && {
                seen.push(*c);
                true
            }
        })
        .map(|c| format!("{c:?}"))
        .collect();
    Some(format!(
        "has {}, which a tool name cannot hold; use letters, digits, `_`, `-` and `.` only",
        shown.join(", ")
    ))
}

pub(super) fn parse_description(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<LitStr> {
    let parsed = string(ctxt, DESCRIPTION, &value).filter(|lit| {
        let empty = lit.value().trim().is_empty();
        if empty {
            let message = format!(
                "`description = {}` is empty; say what the tool does, or remove it to use the doc comment",
                lit.token()
            );
            ctxt.error_spanned_by(lit, message);
        }
        !empty
    });
    Given { key, value, parsed }
}

pub(super) fn parse_dedupe(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<()> {
    let parsed = string(ctxt, DEDUPE, &value).and_then(|lit| {
        if lit.value() == "receiver" {
            Some(())
        } else {
            let message = format!(
                "`dedupe = {}` is not a dedupe mode; the one mode is `dedupe = \"receiver\"`, for a receiver that honours the idempotency key",
                lit.token()
            );
            ctxt.error_spanned_by(&lit, message);
            None
        }
    });
    Given { key, value, parsed }
}

pub(super) fn parse_path(ctxt: &Ctxt, key: Key, ident: Ident, value: Expr) -> Given<Path> {
    let parsed = match &value {
        Expr::Path(ExprPath { qself: None, path, .. }) => Some(path.clone()),
        Expr::Lit(ExprLit { lit: Lit::Str(lit), .. }) if lit.parse::<Path>().is_ok() => {
            let message = format!(
                "`{} = {}` names a function in a string; drop the quotes: `{} = {}`",
                key.name,
                lit.token(),
                key.name,
                lit.value()
            );
            ctxt.error_spanned_by(lit, message);
            None
        }
        _ => {
            let message =
                format!("`{} = {}` must name an async fn, like `{}`", key.name, written(&value), key.example);
            ctxt.error_spanned_by(&value, message);
            None
        }
    };
    Given { key: ident, value, parsed }
}

pub(super) fn parse_param(ctxt: &Ctxt, key: Key, ident: Ident, value: Expr) -> Given<Ident> {
    let parsed = match &value {
        Expr::Path(ExprPath { qself: None, path, .. }) if path.get_ident().is_some() => {
            path.get_ident().cloned()
        }
        Expr::Lit(ExprLit { lit: Lit::Str(lit), .. }) if lit.parse::<Ident>().is_ok() => {
            let message = format!(
                "`{} = {}` names a parameter in a string; drop the quotes: `{} = {}`",
                key.name,
                lit.token(),
                key.name,
                lit.value()
            );
            ctxt.error_spanned_by(lit, message);
            None
        }
        _ => {
            let message = format!(
                "`{} = {}` must name a parameter of the function, like `{}`",
                key.name,
                written(&value),
                key.example
            );
            ctxt.error_spanned_by(&value, message);
            None
        }
    };
    Given { key: ident, value, parsed }
}

/// A string value; an unquoted word or anything else is rejected with the quoted form to write.
pub(super) fn string(ctxt: &Ctxt, key: Key, value: &Expr) -> Option<LitStr> {
    match value {
        Expr::Lit(ExprLit { lit: Lit::Str(lit), .. }) => Some(lit.clone()),
        Expr::Path(ExprPath { qself: None, path, .. }) if path.get_ident().is_some() => {
            let word = written(path);
            let message = format!("`{} = {word}` needs quotes; write `{} = \"{word}\"`", key.name, key.name);
            ctxt.error_spanned_by(value, message);
            None
        }
        _ => {
            let message =
                format!("`{} = {}` must be a string, like `{}`", key.name, written(value), key.example);
            ctxt.error_spanned_by(value, message);
            None
        }
    }
}

pub(super) fn parse_service(ctxt: &Ctxt, key: Ident, value: Expr) -> Given<LitStr> {
    let parsed = string(ctxt, SERVICE, &value).filter(|lit| {
        let empty = lit.value().trim().is_empty();
        if empty {
            let message = format!(
                "`service = {}` is empty; name the service the tool calls, like `service = \"smtp\"`, or remove \
                 `service` to use the tool's name",
                lit.token()
            );
            ctxt.error_spanned_by(lit, message);
        }
        !empty
    });
    Given { key, value, parsed }
}

/// `shows = [cents, order]`: parameters by name, in brackets.
pub(super) fn parse_shows(ctxt: &Ctxt, ident: Ident, value: Expr) -> Given<Vec<Ident>> {
    let parsed = match &value {
        Expr::Array(array) => {
            let mut names = Vec::new();
            for element in &array.elems {
                match element {
                    Expr::Path(ExprPath { qself: None, path, .. }) if path.get_ident().is_some() => {
                        names.extend(path.get_ident().cloned());
                    }
                    other => ctxt.error_spanned_by(
                        other,
                        format!(
                            "`{}` in `shows = [..]` is not a parameter's name; list parameters by name, like \
                             `shows = [cents, order]`",
                            written(other)
                        ),
                    ),
                }
            }
            Some(names)
        }
        _ => {
            let message = format!(
                "`shows = {}` lists parameters by name in brackets, like `shows = [cents, order]`",
                written(&value)
            );
            ctxt.error_spanned_by(&value, message);
            None
        }
    };
    Given { key: ident, value, parsed }
}
