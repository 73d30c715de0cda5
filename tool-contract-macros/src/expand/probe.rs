//! The probe glue: the hidden function that is the one place the author's probe is called, and the
//! closures through which the wrapper and the companion call it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Type};

use crate::ast::{Output, Param, Tool};

use super::turbofish;

/// `|key| { borrow the arguments; async move { probe(args.., key).await } }`, through the hidden probe
/// function ([`probe_fn`]). `NoProbe` when there is none, or when the fallback cannot trust the types it
/// would be checked against.
pub(super) fn probe(
    tool: &Tool,
    bulk: Option<&Param>,
    key: &Ident,
    private: &TokenStream,
) -> Option<TokenStream> {
    probe_on(tool, bulk, key, private, quote!(self), false)
}

/// The probe named by `probe = ...`, when the tool can call one: its path, the tool's value type and
/// the span of the `probe = ...` value.
fn named_probe<'t>(tool: &'t Tool, bulk: Option<&Param>) -> Option<(&'t syn::Path, &'t Type, Span)> {
    let given = tool.args.probe.as_ref()?;
    let path = given.parsed.as_ref()?;
    let Output::Result { value, .. } = tool.output else { return None };
    if tool.future.is_some() {
        return None;
    }
    if tool.value_is_bool() || bulk.is_none() && tool.args.bulk.is_some() {
        return None;
    }
    Some((path, value, given.value.span()))
}

/// The name of the function that calls the author's probe.
fn probe_fn_name(tool: &Tool) -> Ident {
    let name = &tool.func.sig.ident;
    format_ident!("__{}_probe", name.unraw(), span = name.span())
}

/// The one place the author's probe is called: a hidden `async fn` taking the tool's arguments by
/// reference (a bulk tool's items by value) and the key, whose body calls the probe through
/// `probe_fn`, spanned on the `probe = ...` value. The wrapper and the companion both call it, so a
/// probe whose signature or value type does not fit is one error, on the path, naming the signature
/// this tool's probe has, instead of one per caller and rustc's guesses about the arguments.
pub(super) fn probe_fn(tool: &Tool, bulk: Option<&Param>, private: &TokenStream) -> Option<TokenStream> {
    let (path, value, span) = named_probe(tool, bulk)?;
    let local = |name: &str| Ident::new(name, Span::mixed_site().located_at(span));
    let (key, items) = (local("__key"), local("__items"));
    let mut inputs = Vec::new();
    let mut args = Vec::new();
    // The arguments' types, the key's included: the signature the probe is checked against.
    let mut types = Vec::new();
    if tool.receiver.is_some() {
        let this = local("__this");
        inputs.push(quote!(#this: &Self));
        args.push(this);
        types.push(quote!(&Self));
    }
    for param in &tool.params {
        let ty = &param.arg.ty;
        if bulk.is_some_and(|bulk| bulk.index == param.index) {
            inputs.push(quote!(#items: #ty));
            args.push(items.clone());
            types.push(quote!(#ty));
        } else {
            let borrowed = local(&format!("__ref{}", param.index));
            inputs.push(quote!(#borrowed: &#ty));
            args.push(borrowed);
            types.push(quote!(&#ty));
        }
    }
    inputs.push(quote!(#key: #private::IntentKey));
    types.push(quote!(#private::IntentKey));
    let verdict_ty = match bulk {
        Some(_) => quote!(::std::vec::Vec<#private::Item>),
        None => quote!(#private::Probe<#value>),
    };
    // Every token of the call on the `probe = ...` path, so the call as a whole is reported there.
    let probe_fn = quote_spanned!(span=> ::tool_contract::__private::probe_fn);
    let call =
        quote_spanned!(span=> #probe_fn(&#path).call::<(#(#types,)*), #verdict_ty>((#(#args,)* #key,)).await);
    let name = probe_fn_name(tool);
    let generics = &tool.func.sig.generics;
    let where_clause = &generics.where_clause;
    Some(quote! {
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments, clippy::ptr_arg, dead_code)]
        async fn #name #generics (#(#inputs),*) -> #verdict_ty #where_clause {
            #call
        }
    })
}

/// [`probe`], with the receiver taken from `this_is`; with `as_json`, the verdict's value as JSON,
/// boxed: what `run_json` takes.
pub(super) fn probe_on(
    tool: &Tool,
    bulk: Option<&Param>,
    key: &Ident,
    private: &TokenStream,
    this_is: TokenStream,
    as_json: bool,
) -> Option<TokenStream> {
    let (_, value, span) = named_probe(tool, bulk)?;
    let local = |name: &str| Ident::new(name, Span::mixed_site().located_at(span));
    let (key, items, verdict) = (local(&key.to_string()), local("__items"), local("__verdict"));
    let (borrows, args) = probe_args(tool, bulk, this_is, &items, local);
    let (inputs, verdict_ty) = probe_inputs(bulk, &key, &items, value, private);
    let path = probe_fn_path(tool);
    let call = quote!(#path(#(#args,)* #key).await);
    Some(match as_json {
        false => quote! {
            |#inputs| {
                #(#borrows)*
                async move {
                    let #verdict: #verdict_ty = #call;
                    #verdict
                }
            }
        },
        // The verdict with its value as JSON, boxed: what `run_json` takes.
        true => quote! {
            |#inputs| {
                #(#borrows)*
                let __unwritten = &__unwritten;
                ::std::boxed::Box::pin(async move {
                    let #verdict: #verdict_ty = #call;
                    #private::json_verdict(#verdict, __unwritten)
                }) as ::tool_contract::journal::BoxFuture<'_, _>
            }
        },
    })
}

/// The probe closure's borrows (the receiver as `this_is`, each argument but the items by reference)
/// and the arguments it passes to [`probe_fn`], in order, a bulk tool's items as `items`.
fn probe_args(
    tool: &Tool,
    bulk: Option<&Param>,
    this_is: TokenStream,
    items: &Ident,
    local: impl Fn(&str) -> Ident,
) -> (Vec<TokenStream>, Vec<Ident>) {
    let mut borrows = Vec::new();
    let mut args = Vec::new();
    if tool.receiver.is_some() {
        let this = local("__this");
        // In the wrapper `self`; the companion has the receiver as `__this` already.
        borrows.push(quote!(#[allow(clippy::redundant_locals)] let #this = #this_is;));
        args.push(this);
    }
    for param in &tool.params {
        if bulk.is_some_and(|bulk| bulk.index == param.index) {
            args.push(items.clone());
        } else {
            let (name, borrowed) = (param.name(), local(&format!("__ref{}", param.index)));
            borrows.push(quote!(let #borrowed = &#name;));
            args.push(borrowed);
        }
    }
    (borrows, args)
}

/// The probe closure's inputs (the key, and a bulk tool's items) and the type of its verdict.
fn probe_inputs(
    bulk: Option<&Param>,
    key: &Ident,
    items: &Ident,
    value: &Type,
    private: &TokenStream,
) -> (TokenStream, TokenStream) {
    match bulk {
        Some(bulk) => {
            let ty = &bulk.arg.ty;
            (quote!(#key: #private::IntentKey, #items: #ty), quote!(::std::vec::Vec<#private::Item>))
        }
        None => (quote!(#key: #private::IntentKey), quote!(#private::Probe<#value>)),
    }
}

/// The path of the hidden probe function ([`probe_fn`]), through `Self` for a method.
fn probe_fn_path(tool: &Tool) -> TokenStream {
    let name = probe_fn_name(tool);
    let turbofish = turbofish(&tool.func.sig.generics);
    match tool.receiver {
        Some(_) => quote!(Self::#name #turbofish),
        None => quote!(#name #turbofish),
    }
}
