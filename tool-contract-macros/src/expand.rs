//! The wrapper agents call: the author's `async fn`, given the task in place of the call context and
//! returning a `Report`, its body run by the engine once per attempt.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{GenericParam, Ident, ItemFn, Lifetime, Type};

use crate::ast::{Output, Param, Tool, option_value, peeled};
use crate::attr::{self, Kind};
use crate::ctxt::Ctxt;
use crate::valid;

/// Parse, check every rule, generate; every error found is in the `Err`.
pub fn tool(args: TokenStream, func: &ItemFn) -> syn::Result<TokenStream> {
    let ctxt = Ctxt::new();
    let tool = Tool::new(attr::parse(&ctxt, args), func);
    valid::check(&ctxt, &tool);
    ctxt.check()?;
    let wrapper = wrapper(&tool).expect("a tool that follows every rule has a wrapper");
    let companion = companion(&tool);
    Ok(quote!(#wrapper #companion))
}

/// The wrapper, built from what the attribute says as far as it makes sense (a missing effect reads as
/// `read`, a value that did not parse as absent), so the fallback can emit it beside the errors. `None`
/// when the function's own shape leaves nothing to wrap.
pub fn wrapper(tool: &Tool) -> Option<TokenStream> {
    let Output::Result { ty: output, value, .. } = tool.output else {
        return None;
    };
    if tool.future.is_some() {
        return None;
    }
    if !tool.receiver_is_shared_ref() || tool.contexts.iter().any(|context| !context.by_shared_ref) {
        return None;
    }
    let private = quote!(::tool_contract::__private);
    let task = Ident::new("task", Span::mixed_site());
    let key = Ident::new("__key", Span::mixed_site());
    let ItemFn { attrs, vis, sig, .. } = tool.func;
    let name = &sig.ident;
    let bulk = tool.bulk();
    let generics = &sig.generics;
    let where_clause = where_clause(tool, bulk.is_some());
    let unsafety = &sig.unsafety;
    let receiver = tool.receiver.map(|receiver| quote!(#receiver,));
    let params = tool.params.iter().map(|param| {
        let (name, ty) = (param.name(), &param.arg.ty);
        quote!(#name: #ty)
    });
    let report = match bulk {
        Some(_) => quote!(#private::Report<()>),
        None => quote!(#private::Report<#value>),
    };

    let spec = spec(tool, &private);
    let (target, slot) = key_parts(tool);
    let attempt = attempt(tool, bulk, &private, quote!(self));
    let probe = probe(tool, bulk, &key, &private).unwrap_or_else(|| quote!(#private::NoProbe));
    let run = match bulk {
        Some(items) => {
            let items = items.name();
            quote!(#private::run_bulk(#task, &__SPEC, #key, #items, #attempt, #probe))
        }
        None => quote!(#private::run(#task, &__SPEC, #key, #attempt, #probe)),
    };
    let hidden = hidden_fn(tool, output);
    let hidden_probe = probe_fn(tool, bulk, &private);

    Some(quote! {
        #hidden
        #hidden_probe

        #(#attrs)*
        #vis async #unsafety fn #name #generics (#receiver #task: &#private::Task, #(#params),*) -> #report
        #where_clause
        {
            const __SPEC: #private::ToolSpec = #spec;
            let #key = #private::Task::key(#task, &__SPEC, #target, #slot);
            #run.await
        }
    })
}

/// The `target` and `slot` parts of the intent key, as references to the parameters they name.
fn key_parts(tool: &Tool) -> (TokenStream, TokenStream) {
    let target = match tool.key_part(tool.args.target.as_ref()) {
        Some((given, param)) => {
            let ident = Ident::new(&param.name().to_string(), given.value.span());
            quote_spanned!(given.value.span()=> &#ident)
        }
        None => quote!(&""),
    };
    let slot = match tool.key_part(tool.args.slot.as_ref()) {
        Some((given, param)) => {
            let ident = Ident::new(&param.name().to_string(), given.value.span());
            let some = quote!(::core::option::Option::Some);
            quote_spanned!(given.value.span()=> #some(&#ident))
        }
        None => quote!(::core::option::Option::None),
    };
    (target, slot)
}

/// The name of the function that holds the author's body.
fn hidden_name(tool: &Tool) -> Ident {
    let name = &tool.func.sig.ident;
    format_ident!("__{}_body", name.unraw(), span = name.span())
}

/// The author's function as written, renamed: the body every attempt runs, whether the tool is called
/// directly or by name, so it is checked once and its errors point where they would without the
/// macro. Every attribute but the doc comment goes with it (a lint the author allows is allowed in
/// the body).
fn hidden_fn(tool: &Tool, output: &Type) -> TokenStream {
    let ItemFn { attrs, sig, block, .. } = tool.func;
    let hidden = hidden_name(tool);
    let attrs = attrs.iter().filter(|attr| !attr.path().is_ident("doc"));
    let (generics, unsafety) = (&sig.generics, &sig.unsafety);
    // A parameter's doc comment is its description for the model; a parameter takes no doc attribute.
    let mut inputs = sig.inputs.clone();
    for (input, written) in inputs.iter_mut().zip(&sig.inputs) {
        if let (syn::FnArg::Typed(typed), syn::FnArg::Typed(written)) = (input, written) {
            typed.attrs.retain(|attr| !attr.path().is_ident("doc"));
            // An argument the body leaves alone may still be the key's target or the probe's: its name
            // is the model's field, so the author cannot rename it `_thread` to say so. (An unused call
            // context is still reported: the author can rename that one.)
            let context = tool.contexts.iter().any(|context| std::ptr::eq(context.arg, written));
            if !context {
                typed.attrs.push(syn::parse_quote!(#[allow(unused_variables)]));
            }
        }
    }
    let where_clause = &sig.generics.where_clause;
    quote! {
        #[doc(hidden)]
        #(#attrs)*
        async #unsafety fn #hidden #generics (#inputs) -> #output #where_clause #block
    }
}

/// The call of the author's body for one attempt: its arguments in the order written, the call
/// context lent as `&call`, a bulk tool's items as `items`, `this` as the receiver.
fn body_call(
    tool: &Tool,
    bulk: Option<&Param>,
    this: &TokenStream,
    call: &Ident,
    items: &Ident,
) -> TokenStream {
    let hidden = hidden_name(tool);
    let mut args = Vec::new();
    if tool.receiver.is_some() {
        args.push(this.clone());
    }
    for input in &tool.func.sig.inputs {
        let syn::FnArg::Typed(typed) = input else { continue };
        if tool.contexts.iter().any(|context| std::ptr::eq(context.arg, typed)) {
            args.push(quote!(&#call));
        } else if let Some(param) = tool.params.iter().find(|param| std::ptr::eq(param.arg, typed)) {
            if bulk.is_some_and(|bulk| bulk.index == param.index) {
                args.push(quote!(#items));
            } else {
                let name = param.name();
                args.push(quote!(#name));
            }
        }
    }
    let turbofish = turbofish(&tool.func.sig.generics);
    let path = match tool.receiver {
        Some(_) => quote!(Self::#hidden #turbofish),
        None => quote!(#hidden #turbofish),
    };
    let called = quote!(#path(#(#args),*));
    match tool.func.sig.unsafety {
        // The author's own `unsafe fn`: its callers, the wrapper's, keep the obligations it states.
        Some(_) => quote!(unsafe { #called }),
        None => called,
    }
}

/// `::<T, N>` for the type and const parameters of `generics`, or nothing.
fn turbofish(generics: &syn::Generics) -> TokenStream {
    let params: Vec<TokenStream> = generics
        .params
        .iter()
        .filter_map(|param| match param {
            GenericParam::Type(ty) => Some(ty.ident.clone()),
            GenericParam::Const(constant) => Some(constant.ident.clone()),
            GenericParam::Lifetime(_) => None,
        })
        .map(|ident| quote!(#ident))
        .collect();
    if params.is_empty() { quote!() } else { quote!(::<#(#params),*>) }
}

/// The function's own where-clause and what the engine needs of its types, each bound on the author's
/// token: the error type `Classify`, the value recorded in the attempt log. Unmet, each is one error on
/// that type, and the body, which may assume the bounds, adds none.
fn where_clause(tool: &Tool, bulk: bool) -> TokenStream {
    let mut predicates = own_predicates(tool);
    predicates.extend(engine_predicates(tool, bulk));
    if predicates.is_empty() { quote!() } else { quote!(where #(#predicates),*) }
}

fn own_predicates(tool: &Tool) -> Vec<TokenStream> {
    let clause = tool.func.sig.generics.where_clause.iter();
    clause.flat_map(|clause| clause.predicates.iter().map(|predicate| quote!(#predicate))).collect()
}

fn engine_predicates(tool: &Tool, bulk: bool) -> Vec<TokenStream> {
    let Output::Result { value, error, .. } = tool.output else { return Vec::new() };
    let mut predicates = Vec::new();
    if let Some(error) = error {
        predicates.push(quote_spanned!(error.span()=> #error: ::tool_contract::__private::Classify));
    }
    if !bulk {
        predicates.push(quote_spanned!(value.span()=> #value: ::tool_contract::__private::ToolValue));
    }
    predicates
}

/// `ToolSpec::new(name, kind)` and the builder calls for what the attribute sets.
fn spec(tool: &Tool, private: &TokenStream) -> TokenStream {
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
    spec
}

/// `|call| { copy the arguments; async move { body(args..).await } }`: each attempt owns its copies.
/// A bulk tool's attempt gets its items as a second argument.
fn attempt(tool: &Tool, bulk: Option<&Param>, private: &TokenStream, this: TokenStream) -> TokenStream {
    let call = Ident::new("__call", Span::mixed_site());
    let items = Ident::new("__items", Span::mixed_site());
    let copies = copies(tool, bulk);
    let items_arg = bulk.map(|bulk| {
        let ty = &bulk.arg.ty;
        quote!(, #items: #ty)
    });
    let body = body_call(tool, bulk, &this, &call, &items);
    quote! {
        |#call: #private::Call #items_arg| {
            #(#copies)*
            async move { #body.await }
        }
    }
}

/// `let name = arg(&name);` for each argument but a bulk tool's items: an attempt's own copies.
fn copies(tool: &Tool, bulk: Option<&Param>) -> Vec<TokenStream> {
    let copies = tool.params.iter().filter(|param| bulk.is_none_or(|bulk| bulk.index != param.index));
    copies
        .map(|param| {
            // Located on the argument's type, where a missing `Clone` is reported.
            let (name, ty) = (param.name(), &param.arg.ty);
            let at_ty = Span::call_site().located_at(ty.span());
            let arg = quote_spanned!(at_ty=> ::tool_contract::__private::arg);
            quote_spanned!(ty.span()=> let #name = #arg(&#name);)
        })
        .collect()
}

/// `|key| { borrow the arguments; async move { probe(args.., key).await } }`, through the hidden probe
/// function ([`probe_fn`]). `NoProbe` when there is none, or when the fallback cannot trust the types it
/// would be checked against.
fn probe(tool: &Tool, bulk: Option<&Param>, key: &Ident, private: &TokenStream) -> Option<TokenStream> {
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
fn probe_fn(tool: &Tool, bulk: Option<&Param>, private: &TokenStream) -> Option<TokenStream> {
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
fn probe_on(
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

/// `{name}_tool()`: the tool for a `Toolbox`, its definition and its dispatch from a model's JSON
/// arguments. Each parameter type and the value type are checked, where the author wrote them, for
/// what a model-facing tool needs (`ModelArg`, `ModelValue`).
fn companion(tool: &Tool) -> TokenStream {
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
            #private::run_json(#task, &__SPEC, #key, &__attempt, ::core::option::Option::Some(&__probe), &__unwritten)
                .await
        }},
        None => {
            quote!(#private::run_json(#task, &__SPEC, #key, &__attempt, ::core::option::Option::None, &__unwritten).await)
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

/// How a parameter is handed its decoded value.
#[derive(Clone, Copy)]
enum Lent {
    /// As it was decoded.
    No,
    /// `&T`, lent from the decoded `T::Owned`.
    Ref,
    /// `Option<&T>`, lent from the decoded `Option<T::Owned>`.
    OptionRef,
}

/// The type a parameter is decoded into: itself, or for `&T` what `T` owns (`String` for `&str`) and
/// for `Option<&T>` an option of it, with every lifetime `'static` (a decoded value borrows nothing).
fn owned(ty: &Type) -> (Type, Lent) {
    match peeled(ty) {
        Type::Reference(reference) => (owned_of(&reference.elem), Lent::Ref),
        other => match option_value(other).map(peeled) {
            Some(Type::Reference(reference)) => {
                let elem = owned_of(&reference.elem);
                (syn::parse_quote!(::core::option::Option<#elem>), Lent::OptionRef)
            }
            _ => (with_static_lifetimes(other), Lent::No),
        },
    }
}

/// `<T as ToOwned>::Owned`, every lifetime of `T` made `'static`.
fn owned_of(elem: &Type) -> Type {
    let elem = with_static_lifetimes(elem);
    syn::parse_quote!(<#elem as ::std::borrow::ToOwned>::Owned)
}

fn with_static_lifetimes(ty: &Type) -> Type {
    with_lifetimes(ty, "static")
}

/// `ty` with every named lifetime made `'_`: the type of a local borrowed from a decoded argument.
fn with_anonymous_lifetimes(ty: &Type) -> Type {
    with_lifetimes(ty, "_")
}

/// `ty` with every lifetime named `'{name}`.
fn with_lifetimes(ty: &Type, name: &str) -> Type {
    struct Rename<'a>(&'a str);
    impl VisitMut for Rename<'_> {
        fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
            lifetime.ident = Ident::new(self.0, lifetime.ident.span());
        }
    }
    let mut ty = ty.clone();
    Rename(name).visit_type_mut(&mut ty);
    ty
}
