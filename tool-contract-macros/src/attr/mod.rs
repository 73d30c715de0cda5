//! `#[tool(key = value, ...)]`, parsed in one pass: every key is a constant below, every value is
//! checked where it was written, and a key given twice is caught in [`Setting::set`].

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::Parser;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Path, Token};

use crate::ctxt::Ctxt;
use crate::duration;

mod value;

pub use value::name_problem;
use value::*;

/// One key of the attribute, with an example of its use for messages.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub example: &'static str,
}

pub const EFFECT: Key = Key { name: "effect", example: "effect = \"send\"" };
pub const PROBE: Key = Key { name: "probe", example: "probe = notice_landed" };
pub const DEADLINE_FLOOR: Key = Key { name: "deadline_floor", example: "deadline_floor = \"2s\"" };
pub const TARGET: Key = Key { name: "target", example: "target = thread" };
pub const SLOT: Key = Key { name: "slot", example: "slot = reminder" };
pub const VERB: Key = Key { name: "verb", example: "verb = \"post_notice\"" };
pub const DEDUPE: Key = Key { name: "dedupe", example: "dedupe = \"receiver\"" };
pub const BULK: Key = Key { name: "bulk", example: "bulk = rows" };
pub const NAME: Key = Key { name: "name", example: "name = \"post_notice\"" };
pub const DESCRIPTION: Key =
    Key { name: "description", example: "description = \"Post a notice to a support thread.\"" };
pub const MAX_ATTEMPTS: Key = Key { name: "max_attempts", example: "max_attempts = 5" };
pub const BACKOFF: Key = Key { name: "backoff", example: "backoff = \"200ms..5s\"" };
pub const PROBE_RESERVE: Key = Key { name: "probe_reserve", example: "probe_reserve = \"1s\"" };
pub const HORIZON: Key = Key { name: "horizon", example: "horizon = \"30s\"" };
pub const SERVICE: Key = Key { name: "service", example: "service = \"smtp\"" };
pub const SHOWS: Key = Key { name: "shows", example: "shows = [cents, order]" };
pub const KEY_LIFETIME: Key = Key { name: "key_lifetime", example: "key_lifetime = \"24h\"" };

const KEYS: [Key; 17] = [
    EFFECT,
    PROBE,
    DEADLINE_FLOOR,
    TARGET,
    SLOT,
    VERB,
    DEDUPE,
    BULK,
    NAME,
    DESCRIPTION,
    MAX_ATTEMPTS,
    BACKOFF,
    PROBE_RESERVE,
    HORIZON,
    SERVICE,
    SHOWS,
    KEY_LIFETIME,
];

/// Names authors reach for that mean one of the keys.
const ALIASES: [(&str, Key); 10] = [
    ("key_ttl", KEY_LIFETIME),
    ("idempotency_ttl", KEY_LIFETIME),
    ("retries", MAX_ATTEMPTS),
    ("max_retries", MAX_ATTEMPTS),
    ("attempts", MAX_ATTEMPTS),
    ("floor", DEADLINE_FLOOR),
    ("deadline", DEADLINE_FLOOR),
    ("timeout", DEADLINE_FLOOR),
    ("reserve", PROBE_RESERVE),
    ("retry_backoff", BACKOFF),
];

/// The most attempts a tool may ask for: more is a retry storm, not a policy.
pub const MAX_ATTEMPTS_LIMIT: u32 = 100;

/// The longest tool name MCP allows.
pub const MAX_NAME: usize = 128;

/// The effect kinds, spelled as in `tool_contract::effect::EffectKind`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Kind {
    Read,
    Create,
    Send,
    Money,
    Destructive,
}

impl Kind {
    const ALL: [Kind; 5] = [Kind::Read, Kind::Create, Kind::Send, Kind::Money, Kind::Destructive];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Create => "create",
            Kind::Send => "send",
            Kind::Money => "money",
            Kind::Destructive => "destructive",
        }
    }

    /// The kind as the policy table knows it.
    pub fn effect(self) -> tool_contract_effect::EffectKind {
        match self {
            Kind::Read => tool_contract_effect::EffectKind::Read,
            Kind::Create => tool_contract_effect::EffectKind::Create,
            Kind::Send => tool_contract_effect::EffectKind::Send,
            Kind::Money => tool_contract_effect::EffectKind::Money,
            Kind::Destructive => tool_contract_effect::EffectKind::Destructive,
        }
    }

    /// Whether a tool of this kind needs a probe: the policy table's column, as the engine reads it.
    pub fn probe_rule(self) -> tool_contract_effect::ProbeRule {
        self.effect().policy().probe
    }

    /// The variant of `tool_contract::effect::EffectKind`.
    pub fn variant(self) -> Ident {
        let name = match self {
            Kind::Read => "Read",
            Kind::Create => "Create",
            Kind::Send => "Send",
            Kind::Money => "Money",
            Kind::Destructive => "Destructive",
        };
        Ident::new(name, proc_macro2::Span::call_site())
    }
}

/// One `key = value` as the author wrote it, and its meaning when the value made sense.
pub struct Given<T> {
    pub key: Ident,
    pub value: Expr,
    pub parsed: Option<T>,
}

impl<T> Given<T> {
    /// `key = value` as written, for messages.
    pub fn text(&self) -> String {
        format!("{} = {}", self.key, written(&self.value))
    }

    /// The `key = value` tokens, so an error underlines all of them.
    pub fn tokens(&self) -> TokenStream {
        let (key, value) = (&self.key, &self.value);
        quote!(#key = #value)
    }
}

/// A key that may be given once.
pub struct Setting<T> {
    key: Key,
    given: Option<Given<T>>,
}

impl<T> Setting<T> {
    fn new(key: Key) -> Self {
        Setting { key, given: None }
    }

    /// The one place that rejects a key given twice.
    fn set(&mut self, ctxt: &Ctxt, given: Given<T>) {
        if self.given.is_some() {
            let message = format!("`{}` is given twice; keep one `{}`", self.key.name, self.key.name);
            ctxt.error_spanned_by(given.tokens(), message);
        } else {
            self.given = Some(given);
        }
    }
}

impl Args {
    /// Who deduplicates the tool, as the runtime's `ToolSpec` will say it; `None` when `dedupe` was
    /// misspelled or its value rejected (already reported), so no rule guesses.
    pub fn dedupe(&self) -> Option<tool_contract_effect::Dedupe> {
        match &self.dedupe {
            _ if self.misspelled.contains(&DEDUPE) => None,
            None => Some(tool_contract_effect::Dedupe::Probe),
            Some(given) => given.parsed.map(|()| tool_contract_effect::Dedupe::Receiver),
        }
    }
}

/// Everything `#[tool(...)]` says. A key whose value was rejected is kept with `parsed: None`, so the
/// rules that follow do not also report it as missing.
pub struct Args {
    pub effect: Option<Given<Kind>>,
    pub probe: Option<Given<Path>>,
    pub deadline_floor: Option<Given<u64>>,
    pub target: Option<Given<Ident>>,
    pub slot: Option<Given<Ident>>,
    pub verb: Option<Given<LitStr>>,
    pub dedupe: Option<Given<()>>,
    pub bulk: Option<Given<Ident>>,
    pub name: Option<Given<LitStr>>,
    pub description: Option<Given<LitStr>>,
    pub max_attempts: Option<Given<u32>>,
    /// The first wait and the longest, in milliseconds.
    pub backoff: Option<Given<(u64, u64)>>,
    /// In milliseconds.
    pub probe_reserve: Option<Given<u64>>,
    /// The landing horizon, in milliseconds.
    pub horizon: Option<Given<u64>>,
    pub service: Option<Given<LitStr>>,
    /// The parameters a question to a person shows, by name.
    pub shows: Option<Given<Vec<Ident>>>,
    /// How long the receiver keeps an idempotency key, in milliseconds.
    pub key_lifetime: Option<Given<u64>>,
    /// A syntax error stopped the parse; the keys after it were never seen.
    pub broken: bool,
    /// Known keys an unknown key was a near miss of: already reported, so not missing as well.
    pub misspelled: Vec<Key>,
    /// Everything between the parentheses, for errors about the attribute as a whole.
    pub tokens: TokenStream,
}

pub fn parse(ctxt: &Ctxt, args: TokenStream) -> Args {
    let mut settings = Settings::new();
    let mut misspelled = Vec::new();

    let parser = syn::meta::parser(|meta| {
        let known = meta.path.get_ident().and_then(|ident| KEYS.iter().find(|key| *ident == key.name));
        let Some(&key) = known else {
            if meta.path.is_ident(RENAMED_SETTLE) {
                ctxt.error_spanned_by(&meta.path, renamed_settle());
                return skip_value(&meta);
            }
            let close = close_key(&meta.path);
            misspelled.extend(close);
            ctxt.error_spanned_by(&meta.path, unknown_key(&meta.path, close));
            return skip_value(&meta);
        };
        let ident = meta.path.get_ident().cloned().expect("a known key is an ident");
        if !meta.input.peek(Token![=]) {
            ctxt.error_spanned_by(
                &meta.path,
                format!("`{}` needs a value; write `{}`", key.name, key.example),
            );
            return skip_value(&meta);
        }
        let value: Expr = meta.value()?.parse()?;
        settings.read(ctxt, key, ident, value);
        Ok(())
    });
    let broken = match parser.parse2(args.clone()) {
        Ok(()) => false,
        Err(error) => {
            ctxt.syn_error(error);
            true
        }
    };
    settings.into_args(broken, misspelled, args)
}

/// Every key's [`Setting`] while the attribute is read.
struct Settings {
    effect: Setting<Kind>,
    probe: Setting<Path>,
    deadline_floor: Setting<u64>,
    target: Setting<Ident>,
    slot: Setting<Ident>,
    verb: Setting<LitStr>,
    dedupe: Setting<()>,
    bulk: Setting<Ident>,
    name: Setting<LitStr>,
    description: Setting<LitStr>,
    max_attempts: Setting<u32>,
    backoff: Setting<(u64, u64)>,
    probe_reserve: Setting<u64>,
    horizon: Setting<u64>,
    service: Setting<LitStr>,
    shows: Setting<Vec<Ident>>,
    key_lifetime: Setting<u64>,
}

impl Settings {
    /// Every key, none given yet.
    fn new() -> Self {
        Settings {
            effect: Setting::new(EFFECT),
            probe: Setting::new(PROBE),
            deadline_floor: Setting::new(DEADLINE_FLOOR),
            target: Setting::new(TARGET),
            slot: Setting::new(SLOT),
            verb: Setting::new(VERB),
            dedupe: Setting::new(DEDUPE),
            bulk: Setting::new(BULK),
            name: Setting::new(NAME),
            description: Setting::new(DESCRIPTION),
            max_attempts: Setting::new(MAX_ATTEMPTS),
            backoff: Setting::new(BACKOFF),
            probe_reserve: Setting::new(PROBE_RESERVE),
            horizon: Setting::new(HORIZON),
            service: Setting::new(SERVICE),
            shows: Setting::new(SHOWS),
            key_lifetime: Setting::new(KEY_LIFETIME),
        }
    }

    /// `key = value`, the value checked as `key`'s, into `key`'s setting.
    fn read(&mut self, ctxt: &Ctxt, key: Key, ident: Ident, value: Expr) {
        match key {
            EFFECT => self.effect.set(ctxt, parse_effect(ctxt, ident, value)),
            PROBE => self.probe.set(ctxt, parse_path(ctxt, key, ident, value)),
            DEADLINE_FLOOR => self.deadline_floor.set(ctxt, parse_duration(ctxt, key, ident, value)),
            PROBE_RESERVE => self.probe_reserve.set(ctxt, parse_duration(ctxt, key, ident, value)),
            HORIZON => self.horizon.set(ctxt, parse_duration(ctxt, key, ident, value)),
            KEY_LIFETIME => self.key_lifetime.set(ctxt, parse_duration(ctxt, key, ident, value)),
            MAX_ATTEMPTS => self.max_attempts.set(ctxt, parse_attempts(ctxt, ident, value)),
            BACKOFF => self.backoff.set(ctxt, parse_backoff(ctxt, ident, value)),
            TARGET => self.target.set(ctxt, parse_param(ctxt, key, ident, value)),
            SLOT => self.slot.set(ctxt, parse_param(ctxt, key, ident, value)),
            VERB => self.verb.set(ctxt, parse_verb(ctxt, ident, value)),
            SERVICE => self.service.set(ctxt, parse_service(ctxt, ident, value)),
            SHOWS => self.shows.set(ctxt, parse_shows(ctxt, ident, value)),
            DEDUPE => self.dedupe.set(ctxt, parse_dedupe(ctxt, ident, value)),
            NAME => self.name.set(ctxt, parse_name(ctxt, ident, value)),
            DESCRIPTION => self.description.set(ctxt, parse_description(ctxt, ident, value)),
            _ => self.bulk.set(ctxt, parse_param(ctxt, key, ident, value)),
        }
    }

    /// The [`Args`] the settings make, with what the parse itself found.
    fn into_args(self, broken: bool, misspelled: Vec<Key>, tokens: TokenStream) -> Args {
        Args {
            effect: self.effect.given,
            probe: self.probe.given,
            deadline_floor: self.deadline_floor.given,
            target: self.target.given,
            slot: self.slot.given,
            verb: self.verb.given,
            dedupe: self.dedupe.given,
            bulk: self.bulk.given,
            name: self.name.given,
            description: self.description.given,
            max_attempts: self.max_attempts.given,
            backoff: self.backoff.given,
            probe_reserve: self.probe_reserve.given,
            horizon: self.horizon.given,
            service: self.service.given,
            shows: self.shows.given,
            key_lifetime: self.key_lifetime.given,
            broken,
            misspelled,
            tokens,
        }
    }
}

/// The key the landing horizon had before it was named: `settle` now means only a person's settlement.
const RENAMED_SETTLE: &str = "settle";

/// Why `settle = ...` is refused, and what to write instead.
fn renamed_settle() -> String {
    format!(
        "`settle` is now called `horizon` (the landing horizon: how long the service may still apply a request \
         after its caller stopped waiting); write `{}`",
        HORIZON.example
    )
}

/// Step over whatever follows a rejected key (`= value` or `(...)`), so the keys after it are still read.
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}

/// The known key an unknown one is a near miss of, if any.
fn close_key(path: &Path) -> Option<Key> {
    let written = written(path);
    let alias = ALIASES.into_iter().find(|(alias, _)| *alias == written).map(|(_, key)| key);
    alias.or_else(|| KEYS.into_iter().find(|key| edit_distance(&written, key.name) <= 2))
}

fn unknown_key(path: &Path, close: Option<Key>) -> String {
    let written = written(path);
    match close {
        // A word from another library (`retries`) gets an example; a typo only the right spelling.
        Some(key) if edit_distance(&written, key.name) > 2 => {
            format!(
                "unknown key `{written}` in `#[tool]`; did you mean `{}`, as in `{}`?",
                key.name, key.example
            )
        }
        Some(key) => format!("unknown key `{written}` in `#[tool]`; did you mean `{}`?", key.name),
        None => {
            let names: Vec<&str> = KEYS.iter().map(|key| key.name).collect();
            format!("unknown key `{written}` in `#[tool]`; the keys are {}", names.join(", "))
        }
    }
}

/// Tokens as an author would type them: `Self::landed`, not `Self :: landed`.
pub fn written<T: ToTokens>(tokens: &T) -> String {
    fn push(out: &mut String, stream: TokenStream) {
        // What came last: a word (ident or literal), a lifetime's name, or punctuation.
        let (mut word_before, mut lifetime_before, mut quote_before) = (false, false, false);
        // Whether the last token was punctuation joined to this one (`=` of `==`, `>` of `->`).
        let mut joined_before = false;
        for tree in stream {
            let joined_now =
                matches!(&tree, TokenTree::Punct(p) if p.spacing() == proc_macro2::Spacing::Joint);
            let word = matches!(tree, TokenTree::Ident(_) | TokenTree::Literal(_));
            let punct = matches!(tree, TokenTree::Punct(_));
            if (word && word_before && !quote_before) || (lifetime_before && !punct) {
                out.push(' ');
            }
            lifetime_before = word && quote_before;
            word_before = word;
            quote_before = matches!(&tree, TokenTree::Punct(p) if p.as_char() == '\'');
            match tree {
                TokenTree::Group(group) => {
                    let (open, close) = match group.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::None => ("", ""),
                    };
                    out.push_str(open);
                    push(out, group.stream());
                    out.push_str(close);
                }
                TokenTree::Punct(punct) => {
                    let c = punct.as_char();
                    // `Output = T`, `Future + Send`: the spacing rustfmt gives an associated type and bounds.
                    let spaced = matches!(c, '=' | '+')
                        && punct.spacing() == proc_macro2::Spacing::Alone
                        && !joined_before;
                    let arrow_starts = c == '-' && punct.spacing() == proc_macro2::Spacing::Joint;
                    let arrow_ends = c == '>' && joined_before && out.ends_with('-');
                    if spaced || arrow_starts {
                        out.push(' ');
                    }
                    out.push(c);
                    if c == ',' || spaced || arrow_ends {
                        out.push(' ');
                    }
                }
                other => out.push_str(&other.to_string()),
            }
            joined_before = joined_now;
        }
    }
    let mut out = String::new();
    push(&mut out, tokens.to_token_stream());
    out
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tokens: TokenStream) -> (Args, Vec<String>) {
        let ctxt = Ctxt::new();
        let args = parse(&ctxt, tokens);
        let errors = match ctxt.check() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        };
        (args, errors)
    }

    #[test]
    fn durations() {
        use duration::{RangeError, millis, range};
        assert_eq!(millis("250ms"), Some(250));
        assert_eq!(millis("2s"), Some(2_000));
        assert_eq!(millis("1m"), Some(60_000));
        assert_eq!(millis("2h"), Some(7_200_000));
        assert_eq!(millis("0s"), Some(0));
        for bad in [
            "",
            "s",
            "2",
            "2 s",
            "1.5s",
            "2d",
            "2H",
            "-1s",
            "+1s",
            "99999999999999999999ms",
            "18446744073709551615m",
        ] {
            assert_eq!(millis(bad), None, "{bad}");
        }
        assert_eq!(range("200ms..5s"), Ok((200, 5_000)));
        assert_eq!(range("1s..1s"), Ok((1_000, 1_000)));
        assert_eq!(range("5s..200ms"), Err(RangeError::Reversed));
        assert_eq!(range("5s"), Err(RangeError::NoCap));
        assert_eq!(range("..5s"), Err(RangeError::First));
        assert_eq!(range("1s.."), Err(RangeError::Cap));
        assert_eq!(range("1s...5s"), Err(RangeError::Cap));
    }

    #[test]
    fn new_keys_are_read_and_checked() {
        let (given, errors) = args(quote!(max_attempts = 5, backoff = "100ms..2s", probe_reserve = "1s"));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(given.max_attempts.and_then(|g| g.parsed), Some(5));
        assert_eq!(given.backoff.and_then(|g| g.parsed), Some((100, 2_000)));
        assert_eq!(given.probe_reserve.and_then(|g| g.parsed), Some(1_000));
        let (_, errors) = args(quote!(max_attempts = 0, backoff = "2s", probe_reserve = 1, retries = 3));
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].contains("at least `max_attempts = 1`"), "{errors:?}");
        assert!(errors[1].contains("has no cap"), "{errors:?}");
        assert!(errors[2].contains("has no unit"), "{errors:?}");
        assert!(errors[3].contains("did you mean `max_attempts`"), "{errors:?}");
    }

    #[test]
    fn writes_tokens_as_typed() {
        let path: Path = syn::parse_quote!(Self::landed::<T>);
        assert_eq!(written(&path), "Self::landed::<T>");
        let ty: syn::Type = syn::parse_quote!(&'static [String]);
        assert_eq!(written(&ty), "&'static [String]");
        let ty: syn::Type = syn::parse_quote!(Result<Vec<Item>, Class>);
        assert_eq!(written(&ty), "Result<Vec<Item>, Class>");
        let ty: syn::Type = syn::parse_quote!(Pin<Box<dyn Future<Output = Result<u8, E>> + Send + 'a>>);
        assert_eq!(written(&ty), "Pin<Box<dyn Future<Output = Result<u8, E>> + Send + 'a>>");
        let ty: syn::Type = syn::parse_quote!(fn(u8) -> bool);
        assert_eq!(written(&ty), "fn(u8) -> bool");
    }

    #[test]
    fn every_mistake_is_reported_and_the_rest_still_read() {
        let (args, errors) = args(quote!(retries = 3, effect = "send", effect = "read", target = thread));
        assert_eq!(args.effect.and_then(|e| e.parsed), Some(Kind::Send));
        assert_eq!(args.target.and_then(|t| t.parsed).map(|t| t.to_string()).as_deref(), Some("thread"));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("unknown key `retries`"));
        assert_eq!(errors[1], "`effect` is given twice; keep one `effect`");
    }

    #[test]
    fn near_misses_get_a_suggestion() {
        let (_, errors) = args(quote!(efect = "send"));
        assert_eq!(errors, ["unknown key `efect` in `#[tool]`; did you mean `effect`?"]);
        let (_, errors) = args(quote!(effect));
        assert_eq!(errors, ["`effect` needs a value; write `effect = \"send\"`"]);
    }
}
