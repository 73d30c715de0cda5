//! Every rule a tool must follow, each reported on the tokens that break it.

use proc_macro2::Span;

use syn::ext::IdentExt;

use crate::ast::{Output, Tool, has_impl_trait, option_value, peeled, vec_item};
use tool_contract_effect::{Dedupe, ProbeRule};

use crate::attr::{
    Args, BULK, DEDUPE, DESCRIPTION, EFFECT, Given, Key, Kind, NAME, PROBE, SHOWS, SLOT, TARGET,
    name_problem, written,
};
use crate::ctxt::Ctxt;

pub fn check(ctxt: &Ctxt, tool: &Tool) {
    // The attribute's rules first, then the function's, roughly in the order an author reads them.
    check_effect(ctxt, tool);
    check_named(ctxt, tool, TARGET, tool.args.target.as_ref());
    check_named(ctxt, tool, SLOT, tool.args.slot.as_ref());
    check_shows(ctxt, tool);
    check_bulk(ctxt, tool);
    check_async(ctxt, tool);
    check_receiver(ctxt, tool);
    check_contexts(ctxt, tool);
    check_output(ctxt, tool);
    check_definition(ctxt, tool);
    check_timing(ctxt, tool);
}

/// `deadline_floor`, `probe_reserve`: time a side effect needs for its call and its probe.
fn check_timing(ctxt: &Ctxt, tool: &Tool) {
    let args = &tool.args;
    let kind = args.effect.as_ref().and_then(|effect| effect.parsed);
    let side = kind.is_some_and(|kind| kind.effect().has_side_effect());
    if let Some(floor) = &args.deadline_floor
        && floor.parsed == Some(0)
        && side
    {
        let message = format!(
            "`{}` lets a side effect start with no time left for its call or for the probe that resolves a timeout; \
             write the least time one attempt needs, like `deadline_floor = \"2s\"`",
            floor.text()
        );
        ctxt.error_spanned_by(floor.tokens(), message);
    }
    if let Some(horizon) = &args.horizon {
        if args.probe.is_none() && !args.misspelled.contains(&PROBE) && kind.is_some() {
            let why = match kind {
                Some(Kind::Read) => "a read has no probe",
                _ => "this tool has no probe",
            };
            let message = format!(
                "`{}` says how long to wait before trusting the probe's \"not landed\", and {why}: remove it",
                horizon.text()
            );
            ctxt.error_spanned_by(horizon.tokens(), message);
        } else if horizon.parsed == Some(0)
            && let Some(kind) = kind
            && let Some(dedupe) = args.dedupe()
            && kind.effect().default_horizon(dedupe).is_zero()
        {
            // The default is the policy table's, given who deduplicates (`HorizonRule::horizon`), as the
            // runtime's `ToolSpec::get_horizon` reads it.
            let whose = match dedupe {
                Dedupe::Receiver => format!(
                    "`{}` tools with `dedupe = \"receiver\"` (a retry carries the key the receiver deduplicates by)",
                    kind.as_str()
                ),
                Dedupe::Probe => format!("`{}` tools", kind.as_str()),
            };
            let message =
                format!("`{}` is already the landing horizon of {whose}: remove it", horizon.text());
            ctxt.error_spanned_by(horizon.tokens(), message);
        }
    }
    let Some(reserve) = &args.probe_reserve else { return };
    if args.probe.is_none() && !args.misspelled.contains(&PROBE) && kind.is_some() {
        let why = match kind {
            Some(Kind::Read) => "a read has no probe".to_owned(),
            _ => "this tool has no probe".to_owned(),
        };
        let message = format!("`{}` keeps time back for the probe, and {why}: remove it", reserve.text());
        ctxt.error_spanned_by(reserve.tokens(), message);
    } else if reserve.parsed == Some(0) {
        let message = format!(
            "`{}` keeps no time for the probe, so an attempt that times out has nothing left to resolve it; \
             give the probe its usual time, like `probe_reserve = \"1s\"`, or remove it to keep back the floor",
            reserve.text()
        );
        ctxt.error_spanned_by(reserve.tokens(), message);
    }
}

/// What a model needs to choose and call the tool: a name it may call, a description to read,
/// parameters it fills by name with JSON.
fn check_definition(ctxt: &Ctxt, tool: &Tool) {
    let args = &tool.args;
    let name = tool.name();
    if args.name.is_none()
        && !args.misspelled.contains(&NAME)
        && let Some(problem) = name_problem(&name.unraw().to_string())
    {
        let message = format!(
            "`{name}` {problem}; a model calls the tool by this name: keep the function's name and add `name = \"...\"` to `#[tool]`"
        );
        ctxt.error_spanned_by(name, message);
    }
    if args.description.is_none() && !args.misspelled.contains(&DESCRIPTION) && tool.docs().is_empty() {
        let message = format!(
            "`{name}` has no description, and a model cannot choose a tool it cannot read; add a doc comment \
             (`/// What {name} does, for the model.`) or `description = \"...\"` to `#[tool]`"
        );
        ctxt.error_spanned_by(name, message);
    }
    for param in &tool.params {
        if param.ident.is_none() {
            let message = format!(
                "a model fills a tool's parameters by name, and `{}` has none; give it a name the model will read (`name: {}`) and destructure it in the body",
                written(&param.arg.pat),
                written(&param.arg.ty)
            );
            ctxt.error_spanned_by(&param.arg.pat, message);
        } else if let Some((lifetime, instead)) = lent_for_static(&param.arg.ty) {
            let message = format!(
                "a model's argument lives only as long as its call, so it cannot be lent for `'static`; take `{instead}` or an owned type"
            );
            ctxt.error_spanned_by(lifetime, message);
        } else if has_impl_trait(&param.arg.ty) {
            let message = format!(
                "a model's JSON arguments are decoded into a type, and `{}` names none; take a concrete type (`String`, a struct) or a generic parameter",
                written(&param.arg.ty)
            );
            ctxt.error_spanned_by(&param.arg.ty, message);
        }
    }
}

fn check_async(ctxt: &Ctxt, tool: &Tool) {
    let sig = &tool.func.sig;
    if let Some(future) = tool.future {
        let output = match tool.output {
            Output::Result { ty, .. } | Output::Other(ty) => written(ty),
            Output::Missing => "...".to_owned(),
        };
        let message = format!(
            "`#[tool]` goes on an `async fn`, and `{}` returns `{}` instead; the engine runs the body once per attempt: \
             write `async fn {}(...) -> {output}`",
            sig.ident,
            written(future),
            sig.ident
        );
        ctxt.error_spanned_by(future, message);
    } else if sig.asyncness.is_none() {
        let message = format!(
            "`#[tool]` goes on an `async fn`, and `{}` is not async; write `async fn {}`",
            sig.ident, sig.ident
        );
        ctxt.error_spanned_by(sig.fn_token, message);
    }
}

fn check_receiver(ctxt: &Ctxt, tool: &Tool) {
    let Some(receiver) = tool.receiver else { return };
    if !tool.receiver_is_shared_ref() {
        let message = format!(
            "a tool method takes `&self`, not `{}`: every attempt borrows `self` again; keep mutable state behind a lock",
            written(receiver)
        );
        ctxt.error_spanned_by(receiver, message);
    }
}

fn check_contexts(ctxt: &Ctxt, tool: &Tool) {
    for (i, context) in tool.contexts.iter().enumerate() {
        let pat = written(&context.arg.pat);
        if i > 0 {
            let message =
                format!("`{pat}` is a second call context; one `&Call` parameter is enough, remove this one");
            ctxt.error_spanned_by(context.arg, message);
        } else if !context.by_shared_ref {
            let message = format!(
                "the call context is lent to the body; take it by shared reference: `{pat}: &Call`, not `{}`",
                written(&context.arg.ty)
            );
            ctxt.error_spanned_by(&context.arg.ty, message);
        }
    }
}

const TELLS_NOTHING: &str = "tells the agent nothing it can act on; return what the tool did or found (the id of \
                             what it created or sent, the value it read) and let the report say whether it landed";

fn check_output(ctxt: &Ctxt, tool: &Tool) {
    match tool.output {
        Output::Missing => {
            let message = format!(
                "`{}` returns nothing; a tool returns `Result<T, E>`: add `-> Result<T, E>`, with the value it produced and an error type that implements `Classify`",
                tool.name()
            );
            ctxt.error_spanned_by(tool.name(), message);
        }
        Output::Result { ty, .. } => {
            if tool.value_is_bool() {
                ctxt.error_spanned_by(ty, format!("`{}` {TELLS_NOTHING}", written(ty)));
            }
        }
        Output::Other(ty) => {
            if tool.value_is_bool() {
                ctxt.error_spanned_by(ty, format!("`{}` {TELLS_NOTHING}", written(ty)));
            } else {
                let value = written(option_value(ty).unwrap_or(ty));
                let message = format!(
                    "a tool returns `Result<T, E>`, not `{}`; return `Result<{value}, E>` with an error type that implements `Classify`",
                    written(ty)
                );
                ctxt.error_spanned_by(ty, message);
            }
        }
    }
}

fn check_effect(ctxt: &Ctxt, tool: &Tool) {
    let args = &tool.args;
    let Some(effect) = &args.effect else {
        check_effect_missing(ctxt, args);
        return;
    };
    let Some(kind) = effect.parsed else {
        return;
    };
    check_probe_rule(ctxt, args, effect, kind);
    check_dedupe(ctxt, args, kind);
}

/// A missing `effect`, unless the parse broke off or an unknown key was a near miss of it.
fn check_effect_missing(ctxt: &Ctxt, args: &Args) {
    if !args.broken && !args.misspelled.contains(&EFFECT) {
        let message = "`#[tool]` needs an effect; add `effect = \"read\"`, `\"create\"`, `\"send\"`, `\"money\"` or `\"destructive\"`";
        if args.tokens.is_empty() {
            ctxt.error_at(Span::call_site(), message);
        } else {
            ctxt.error_spanned_by(&args.tokens, message);
        }
    }
}

/// `probe` where the effect kind needs one, and not where it needs none.
fn check_probe_rule(ctxt: &Ctxt, args: &Args, effect: &Given<Kind>, kind: Kind) {
    let probe_misspelled = args.misspelled.contains(&PROBE);
    // Which kinds need a probe is the policy table's (`EffectKind::policy`), as the engine reads it.
    match (&args.probe, kind.probe_rule()) {
        (Some(probe), ProbeRule::NotNeeded) => {
            let message = format!(
                "`{}` is pointless on `effect = \"{}\"`: a read changes nothing, so there is nothing to look for; remove it",
                probe.text(),
                kind.as_str()
            );
            ctxt.error_spanned_by(probe.tokens(), message);
        }
        (None, _) if probe_misspelled => {}
        (None, ProbeRule::RequiredUnlessReceiverDedupes)
            if args.dedupe.is_none() && !args.misspelled.contains(&DEDUPE) =>
        {
            let message = format!(
                "`effect = \"{}\"` needs a probe; add `probe = fn_name` naming a read that finds the created record by its intent key, \
                 or `dedupe = \"receiver\"` if the receiver honours the idempotency key",
                kind.as_str()
            );
            ctxt.error_spanned_by(effect.tokens(), message);
        }
        (None, ProbeRule::Required) => {
            let what = match kind {
                Kind::Send => "finds the sent message by its intent key",
                Kind::Money => "finds the charge or transfer by its intent key",
                Kind::Destructive => "tells whether the deletion already happened",
                _ => "tells whether the first attempt landed",
            };
            let message = format!(
                "`effect = \"{}\"` needs a probe; add `probe = fn_name` naming a read that {what}",
                kind.as_str()
            );
            ctxt.error_spanned_by(effect.tokens(), message);
        }
        _ => {}
    }
}

/// `dedupe` on `effect = "create"` only; `key_lifetime` with `dedupe` only, and keeping the key a while.
fn check_dedupe(ctxt: &Ctxt, args: &Args, kind: Kind) {
    if let Some(lifetime) = &args.key_lifetime {
        if args.dedupe.is_none() && !args.misspelled.contains(&DEDUPE) {
            let message = format!(
                "`{}` says how long the receiver keeps the idempotency key, and only a tool with `dedupe = \"receiver\"` \
                 relies on the receiver: add `dedupe = \"receiver\"` if it honours the key, or remove it",
                lifetime.text()
            );
            ctxt.error_spanned_by(lifetime.tokens(), message);
        } else if lifetime.parsed == Some(0) {
            let message = format!(
                "`{}` is a receiver that keeps no key, which deduplicates nothing: give its real lifetime \
                 (Stripe keeps keys for `\"24h\"`), or remove `dedupe = \"receiver\"` and give the tool a probe",
                lifetime.text()
            );
            ctxt.error_spanned_by(lifetime.tokens(), message);
        }
    }
    let Some(dedupe) = &args.dedupe else { return };
    if kind != Kind::Create {
        let instead = match kind {
            Kind::Read => "a read has nothing to deduplicate".to_owned(),
            other => format!("a `{}` is guarded by its probe", other.as_str()),
        };
        let message =
            format!("`{}` applies to `effect = \"create\"` only; {instead}: remove it", dedupe.text());
        ctxt.error_spanned_by(dedupe.tokens(), message);
    }
}

/// `shows = [..]` lists parameters a question to a person shows: of a side effect, each by a name the
/// function has.
fn check_shows(ctxt: &Ctxt, tool: &Tool) {
    let Some(shows) = &tool.args.shows else { return };
    let kind = tool.args.effect.as_ref().and_then(|effect| effect.parsed);
    if kind == Some(Kind::Read) {
        let message = format!(
            "`{}` lists what a question to a person shows, and a read asks nobody: remove it",
            shows.text()
        );
        ctxt.error_spanned_by(shows.tokens(), message);
        return;
    }
    for name in shows.parsed.iter().flatten() {
        let given = Given { key: shows.key.clone(), value: shows.value.clone(), parsed: Some(name.clone()) };
        if tool.param(&given).is_none() {
            let names: Vec<String> =
                tool.params.iter().filter_map(|p| p.ident).map(|i| format!("`{i}`")).collect();
            let message = if names.is_empty() {
                format!(
                    "`{name}` in `{}` names no parameter: `{}` has none; remove it",
                    SHOWS.name,
                    tool.name()
                )
            } else {
                format!(
                    "`{name}` in `{} = [..]` names no parameter of `{}`; name one of {}",
                    SHOWS.name,
                    tool.name(),
                    names.join(", ")
                )
            };
            ctxt.error_spanned_by(name, message);
        }
    }
}

/// `target` and `slot` name a parameter that identifies the act, never the payload.
fn check_named(ctxt: &Ctxt, tool: &Tool, key: Key, given: Option<&Given<syn::Ident>>) {
    let Some(given) = given else { return };
    if !names_a_param(ctxt, tool, key, given) {
        return;
    }
    let bulk = tool.args.bulk.as_ref().and_then(|bulk| bulk.parsed.as_ref());
    if bulk.is_some() && bulk == given.parsed.as_ref() {
        let message = format!(
            "`{}` names the bulk items; the intent key must not depend on the payload: name what the items are written to",
            given.text()
        );
        ctxt.error_spanned_by(given.tokens(), message);
    }
}

fn check_bulk(ctxt: &Ctxt, tool: &Tool) {
    let Some(bulk) = &tool.args.bulk else { return };
    if !names_a_param(ctxt, tool, BULK, bulk) {
        return;
    }
    let param = tool.param(bulk).expect("checked above");
    if vec_item(&param.arg.ty).is_none() {
        let element = element(&param.arg.ty).map_or_else(|| "...".to_owned(), written);
        let message = format!(
            "`{}` names `{}: {}`; bulk items come as a `Vec`: take `{}: Vec<{element}>`",
            bulk.text(),
            written(&param.arg.pat),
            written(&param.arg.ty),
            written(&param.arg.pat)
        );
        ctxt.error_spanned_by(&param.arg.ty, message);
    }
    if let Output::Result { value, .. } = tool.output
        && !tool.returns_items()
    {
        let message = format!(
            "a `{}` tool returns one `Item` per item it was given: `Result<Vec<Item>, E>`, not `{}`",
            bulk.text(),
            written(value)
        );
        ctxt.error_spanned_by(value, message);
    }
}

/// Reports a `key = name` that names no parameter; `true` when it names one.
fn names_a_param(ctxt: &Ctxt, tool: &Tool, key: Key, given: &Given<syn::Ident>) -> bool {
    let Some(name) = &given.parsed else { return false };
    if tool.param(given).is_some() {
        return true;
    }
    let is_context = tool.contexts.iter().any(|context| match &*context.arg.pat {
        syn::Pat::Ident(pat) => pat.ident == *name,
        _ => false,
    });
    let names: Vec<String> = tool.params.iter().filter_map(|p| p.ident).map(|i| format!("`{i}`")).collect();
    let message = if is_context {
        format!(
            "`{}` names the call context; name the parameter that identifies the {}",
            given.text(),
            role(key)
        )
    } else if names.is_empty() {
        format!(
            "`{}` names no parameter, and `{}` has none to name; add one or remove `{}`",
            given.text(),
            tool.name(),
            key.name
        )
    } else {
        format!(
            "`{}` names no parameter of `{}`; name one of {}",
            given.text(),
            tool.name(),
            names.join(", ")
        )
    };
    ctxt.error_spanned_by(&given.value, message);
    false
}

fn role(key: Key) -> &'static str {
    match key {
        TARGET => "object acted on",
        SLOT => "repeated act (reminder #1, #2)",
        _ => "items",
    }
}

/// `T` of `&[T]`, `[T; N]`, `&Vec<T>`: what a bulk parameter should hold in its `Vec`.
fn element(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Reference(reference) => element(&reference.elem),
        syn::Type::Slice(slice) => Some(&slice.elem),
        syn::Type::Array(array) => Some(&array.elem),
        other => vec_item(other),
    }
}

/// The `'static` of a parameter lent for `'static` (`&'static T`, `Option<&'static T>`), which no
/// decoded argument can be, and the type to take instead (`&T`, `Option<&T>`).
fn lent_for_static(ty: &syn::Type) -> Option<(&syn::Lifetime, String)> {
    let (lent, in_option) = match peeled(ty) {
        syn::Type::Reference(reference) => (reference, false),
        other => match option_value(other).map(peeled)? {
            syn::Type::Reference(reference) => (reference, true),
            _ => return None,
        },
    };
    let lifetime = lent.lifetime.as_ref().filter(|lifetime| lifetime.ident == "static")?;
    let borrowed = format!("&{}", written(&lent.elem));
    Some((lifetime, if in_option { format!("Option<{borrowed}>") } else { borrowed }))
}
