//! The tool's `ToolSpec`, as a constant expression: its name and effect kind, and a builder call for
//! each option the attribute sets.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::ext::IdentExt;

use crate::ast::Tool;
use crate::attr::Kind;

/// `ToolSpec::new(name, kind)` and the builder calls for what the attribute sets.
pub(super) fn spec(tool: &Tool, private: &TokenStream) -> TokenStream {
    let args = &tool.args;
    let name = match tool.args.name.as_ref().and_then(|name| name.parsed.as_ref()) {
        Some(name) => name.value(),
        None => tool.name().unraw().to_string(),
    };
    let kind = args.effect.as_ref().and_then(|effect| effect.parsed).unwrap_or(Kind::Read).variant();
    let mut spec = quote!(#private::ToolSpec::new(#name, #private::EffectKind::#kind));
    if let Some(verb) = args.verb.as_ref().and_then(|verb| verb.parsed.as_ref()) {
        spec.extend(quote!(.verb(#verb)));
    }
    if let Some(service) = args.service.as_ref().and_then(|service| service.parsed.as_ref()) {
        spec.extend(quote!(.service(#service)));
    }
    if let Some(millis) = args.deadline_floor.as_ref().and_then(|floor| floor.parsed) {
        let millis = Literal::u64_unsuffixed(millis);
        spec.extend(quote!(.deadline_floor(#private::Duration::from_millis(#millis))));
    }
    if args.dedupe.as_ref().is_some_and(|dedupe| dedupe.parsed.is_some()) {
        spec.extend(quote!(.dedupe(#private::Dedupe::Receiver)));
    }
    if let Some(millis) = args.key_lifetime.as_ref().and_then(|lifetime| lifetime.parsed) {
        let millis = Literal::u64_unsuffixed(millis);
        spec.extend(quote!(.key_lifetime(#private::Duration::from_millis(#millis))));
    }
    if let Some(attempts) = args.max_attempts.as_ref().and_then(|attempts| attempts.parsed) {
        let attempts = Literal::u32_unsuffixed(attempts);
        spec.extend(quote!(.max_attempts(#attempts)));
    }
    if let Some((first, cap)) = args.backoff.as_ref().and_then(|backoff| backoff.parsed) {
        let (first, cap) = (Literal::u64_unsuffixed(first), Literal::u64_unsuffixed(cap));
        spec.extend(quote!(.backoff(#private::Backoff {
            base: #private::Duration::from_millis(#first),
            max: #private::Duration::from_millis(#cap),
            jitter: #private::Jitter::Full,
        })));
    }
    if let Some(millis) = args.probe_reserve.as_ref().and_then(|reserve| reserve.parsed) {
        let millis = Literal::u64_unsuffixed(millis);
        spec.extend(quote!(.probe_reserve(#private::Duration::from_millis(#millis))));
    }
    if let Some(millis) = args.horizon.as_ref().and_then(|horizon| horizon.parsed) {
        let millis = Literal::u64_unsuffixed(millis);
        spec.extend(quote!(.horizon(#private::Duration::from_millis(#millis))));
    }
    if let Some(shows) = args.shows.as_ref().and_then(|shows| shows.parsed.as_ref()) {
        let names = shows.iter().map(|name| name.unraw().to_string());
        spec.extend(quote!(.shows(&[#(#names),*])));
    }
    spec
}
