//! The companion `{name}_tool()`: the tool's definition for a model (its parameters' schemas and
//! descriptions) and its dispatch from a model's JSON arguments.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, Type};

use crate::ast::{Output, Tool, option_value};

use super::lent::{Lent, owned, with_anonymous_lifetimes, with_static_lifetimes};
use super::probe::probe_on;
use super::{body_call, copies, engine_predicates, key_parts, own_predicates, spec, turbofish};

/// `{name}_tool()`: the tool for a `Toolbox`, its definition and its dispatch from a model's JSON
/// arguments. Each parameter type and the value type are checked, where the author wrote them, for
/// what a model-facing tool needs (`ModelArg`, `ModelValue`).
pub(super) fn companion(tool: &Tool) -> TokenStream {
    let Output::Result { value, .. } = tool.output else {
        return TokenStream::new();
    };
    let private = quote!(::tool_contract::__private);
    let this = Ident::new("__this", Span::mixed_site());
    let task = Ident::new("__task", Span::mixed_site());
    let args = Ident::new("__args", Span::mixed_site());
    let params_ident = Ident::new("__params", Span::mixed_site());
    let ItemFn { vis, sig, .. } = tool.func;
    let name = &sig.ident;
    let companion = format_ident!("{}_tool", name.unraw(), span = name.span());
    let generics = &sig.generics;
    let bulk = tool.bulk().is_some();

    let where_clause = companion_where(tool, value, bulk);
    let ModelParams { describe, takes, names, passes, expected } =
        model_params(tool, &private, &params_ident, &args);
    let output = model_output(value, bulk);
    let description = tool_description(tool);
    let turbofish = turbofish(generics);
    let (wrapper, tool_fn) = match tool.receiver {
        Some(_) => (quote!(Self::#name #turbofish), quote!(#private::ToolFn<Self>)),
        None => (quote!(#name #turbofish), quote!(#private::ToolFn)),
    };
    let run = companion_run(tool, &private, &this, &task, &wrapper, &passes);
    // What a question to a person binds of the call, read before any argument is taken (a bulk tool
    // runs through its wrapper, which binds nothing).
    let bind = if bulk { quote!() } else { quote!(let __arguments = #args.arguments(&__SPEC);) };
    let spec = spec(tool, &private);
    let doc = companion_doc(name);
    quote! {
        #[doc = #doc]
        #[must_use]
        // Unused when the tool is only called directly, which is no mistake.
        #[allow(dead_code, unused_lifetimes, clippy::extra_unused_lifetimes, clippy::needless_lifetimes)]
        #vis fn #companion #generics () -> #tool_fn #where_clause {
            const __SPEC: #private::ToolSpec = #spec;
            #private::ToolFn::new(
                || {
                    let mut #params_ident = #private::Params::new();
                    #(#describe)*
                    let __definition = #private::Definition::new(&__SPEC, #description, #params_ident);
                    <#output as #private::ModelValue>::describe(__definition)
                },
                // Decoded before anything is boxed: the box holds the arguments and the engine's future.
                |#this, #task, mut #args| {
                    #bind
                    #(#takes)*
                    let (#(::core::option::Option::Some(#names),)* true) = (#(#names,)* #args.is_clean()) else {
                        let __refusal = #args.refuse(#task, &__SPEC, &[#(#expected),*]);
                        return ::std::boxed::Box::pin(::core::future::ready(__refusal));
                    };
                    ::std::boxed::Box::pin(async move { #run })
                },
            )
        }
    }
}

/// The companion's where-clause: the wrapper's bounds, then what a model-facing tool needs of each
/// parameter type, the value type and the receiver.
fn companion_where(tool: &Tool, value: &Type, bulk: bool) -> TokenStream {
    // The wrapper's bounds again, on the same tokens: an unmet one is still reported once.
    let mut predicates = own_predicates(tool);
    predicates.extend(engine_predicates(tool, bulk));
    for param in &tool.params {
        let ty = &param.arg.ty;
        let (owned, _) = owned(ty);
        // Every token of a bound on the author's span, so an unmet bound is reported on their type.
        predicates.push(quote_spanned!(ty.span()=> #owned: ::tool_contract::__private::ModelArg));
        // A decoded argument owns its data; the boxed call that holds it may outlive any borrow.
        predicates
            .push(quote_spanned!(ty.span()=> #owned: ::core::marker::Send + ::core::marker::Sync + 'static));
    }
    if !bulk {
        let value = with_static_lifetimes(value);
        predicates.push(quote_spanned!(value.span()=> #value: ::tool_contract::__private::ModelValue));
    }
    if let Some(receiver) = tool.receiver {
        // A toolbox keeps the receiver behind an `Arc` for as long as it lives. (No `Sync` bound here: a
        // where-clause on `Self` would shadow the auto impl and pin its lifetimes.)
        predicates.push(quote_spanned!(receiver.span()=> Self: 'static));
    }
    if predicates.is_empty() { quote!() } else { quote!(where #(#predicates),*) }
}

/// Each parameter's part of the companion, in the order written.
#[derive(Default)]
struct ModelParams {
    /// Its entry in the definition's parameters.
    describe: Vec<TokenStream>,
    /// Its decoding from the model's JSON arguments.
    takes: Vec<TokenStream>,
    /// Its local, an `Option` until every argument is known to have decoded.
    names: Vec<Ident>,
    /// What the tool is handed: the decoded value, or a borrow of it.
    passes: Vec<TokenStream>,
    /// Its field as a refusal lists it.
    expected: Vec<String>,
}

/// [`ModelParams`] for the tool's parameters: `params` is the definition's parameter list, `args` the
/// model's JSON arguments.
fn model_params(tool: &Tool, private: &TokenStream, params: &Ident, args: &Ident) -> ModelParams {
    let mut model = ModelParams::default();
    for param in &tool.params {
        let ty = &param.arg.ty;
        let (owned, lent) = owned(ty);
        let local = param.name();
        let field = local.unraw().to_string();
        let required = option_value(ty).is_none();
        let description = param_description(&param.docs);
        model.describe.push(
            quote!(<#owned as #private::ModelArg>::describe(&mut #params, #field, #description, #required);),
        );
        model.takes.push(quote!(let #local = #args.take::<#owned>(#field);));
        model.passes.push(match lent {
            Lent::No => quote!(#local),
            Lent::Ref => quote!(::core::borrow::Borrow::borrow(&#local)),
            Lent::OptionRef => quote!(#local.as_ref().map(::core::borrow::Borrow::borrow)),
        });
        model.names.push(local);
        model.expected.push(if required { field } else { format!("{field} (optional)") });
    }
    model
}

/// A parameter's description for the model: its doc comment's lines, or `None` without one.
fn param_description(docs: &[&syn::Expr]) -> TokenStream {
    if docs.is_empty() {
        quote!(::core::option::Option::None)
    } else {
        quote!(::core::option::Option::Some(::core::concat!(#(#docs, "\n"),*)))
    }
}

/// The type whose schema the definition gives for the value: the tool's value, `()` for a bulk tool.
fn model_output(value: &Type, bulk: bool) -> TokenStream {
    if bulk {
        quote!(())
    } else {
        let value = with_static_lifetimes(value);
        quote!(#value)
    }
}

/// The tool's description for the model: `description = "..."`, or the function's doc comment.
fn tool_description(tool: &Tool) -> TokenStream {
    match tool.args.description.as_ref().and_then(|given| given.parsed.as_ref()) {
        Some(lit) => quote!(#lit),
        None => {
            let docs = tool.docs();
            quote!(::core::concat!(#(#docs, "\n"),*))
        }
    }
}

/// What the companion's boxed future runs: the wrapper for a bulk tool, [`json_run`] for any other.
fn companion_run(
    tool: &Tool,
    private: &TokenStream,
    this: &Ident,
    task: &Ident,
    wrapper: &TokenStream,
    passes: &[TokenStream],
) -> TokenStream {
    match tool.bulk() {
        // A bulk tool runs through its wrapper, the engine instantiated for its items.
        Some(_) => {
            let this = tool.receiver.map(|_| quote!(#this,));
            quote!(#private::into_json(#wrapper(#this #task, #(#passes),*).await))
        }
        None => json_run(tool, private, this, task, wrapper),
    }
}

/// The companion's doc comment.
fn companion_doc(name: &Ident) -> String {
    format!(
        "The `{}` tool for a `Toolbox`: its definition (name, description, JSON Schemas, effect kind) and \
         its dispatch from a model's JSON arguments.",
        name.unraw()
    )
}

/// A tool called by name, in the companion's boxed future: the arguments as the wrapper takes them,
/// the attempt and probe with the value as JSON, and `run_json`, the engine compiled once in
/// tool-contract for every tool, where a direct call of the wrapper instantiates it for this tool.
fn json_run(
    tool: &Tool,
    private: &TokenStream,
    this: &Ident,
    task: &Ident,
    wrapper: &TokenStream,
) -> TokenStream {
    let key = Ident::new("__key", Span::mixed_site());
    let call = Ident::new("__call", Span::mixed_site());
    let items = Ident::new("__items", Span::mixed_site());
    // An argument taken by reference is lent from its decoded value, as a direct caller lends it.
    let lends = tool.params.iter().filter_map(|param| {
        let name = param.name();
        let ty = with_anonymous_lifetimes(&param.arg.ty);
        match owned(&param.arg.ty).1 {
            Lent::No => None,
            Lent::Ref => Some(quote!(let #name: #ty = ::core::borrow::Borrow::borrow(&#name);)),
            Lent::OptionRef => {
                Some(quote!(let #name: #ty = #name.as_ref().map(::core::borrow::Borrow::borrow);))
            }
        }
    });
    let (target, slot) = key_parts(tool);
    let copies = copies(tool, None);
    let this_tokens = quote!(#this);
    let body = body_call(tool, None, &this_tokens, &call, &items);
    let probe = match probe_on(tool, None, &key, private, quote!(#this), true) {
        Some(probe) => quote! {{
            let __probe = #probe;
            #private::run_json(#task, &__SPEC, #key, &__attempt, ::core::option::Option::Some(&__probe), &__unwritten, __arguments)
                .await
        }},
        None => {
            quote!(#private::run_json(#task, &__SPEC, #key, &__attempt, ::core::option::Option::None, &__unwritten, __arguments).await)
        }
    };
    // The tool's value type, so a value a person names when settling is checked against it.
    let unwritten = match &tool.output {
        crate::ast::Output::Result { value, .. } => {
            let value = with_anonymous_lifetimes(value);
            quote!(#private::Unwritten::checking::<#value>())
        }
        _ => quote!(#private::Unwritten::default()),
    };
    quote! {
        // The wrapper is this tool's direct call: used, as far as the compiler's lint is concerned.
        let _ = #wrapper;
        #(#lends)*
        let #key = #private::Task::key(#task, &__SPEC, #target, #slot);
        let __unwritten = #unwritten;
        let __attempt = |#call: #private::Call| {
            #(#copies)*
            let __unwritten = &__unwritten;
            ::std::boxed::Box::pin(async move { #private::json_answer(#body.await, __unwritten) })
                as ::tool_contract::journal::BoxFuture<'_, _>
        };
        #probe
    }
}
