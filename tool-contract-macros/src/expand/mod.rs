//! The wrapper agents call: the author's `async fn`, given the task in place of the call context and
//! returning a `Report`, its body run by the engine once per attempt.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{GenericParam, Ident, ItemFn, Type};

use crate::ast::{Output, Param, Tool};
use crate::attr::{self};
use crate::ctxt::Ctxt;
use crate::valid;

mod companion;
mod lent;
mod probe;
mod spec;

use companion::companion;
use probe::{probe, probe_fn};
use spec::spec;

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
