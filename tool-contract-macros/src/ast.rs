//! The typed model of one tool: the function's parts sorted by role, each kept as the syn node it came
//! from so that errors and generated code carry the author's spans.

use proc_macro2::Span;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, ItemFn, Meta, Pat, PatType, PathArguments, Receiver,
    ReturnType, Type, TypePath,
};

use crate::attr::{Args, Given};

pub struct Tool<'a> {
    pub func: &'a ItemFn,
    pub args: Args,
    pub receiver: Option<&'a Receiver>,
    /// Parameters typed `Call` (by reference, as the author should write them, or not).
    pub contexts: Vec<Context<'a>>,
    /// Every other parameter, in order.
    pub params: Vec<Param<'a>>,
    pub output: Output<'a>,
    /// The declared return type of a function that is not `async` but returns a future
    /// (`impl Future<Output = X>`, `Pin<Box<dyn Future<Output = X>>>`, `BoxFuture<'_, X>`); `output`
    /// then describes `X`.
    pub future: Option<&'a Type>,
}

/// The call-context parameter: `call: &Call`.
pub struct Context<'a> {
    pub arg: &'a PatType,
    /// `&Call`, the one form that works: each attempt owns its `Call` and lends it to the body.
    pub by_shared_ref: bool,
}

pub struct Param<'a> {
    pub arg: &'a PatType,
    /// The name, when the pattern is a plain name (`thread`, `mut text`).
    pub ident: Option<&'a Ident>,
    /// Position among the parameters other than the receiver and the call context.
    pub index: usize,
    /// Its doc comment, line by line: the parameter's description for the model.
    pub docs: Vec<&'a Expr>,
}

pub enum Output<'a> {
    /// No `->`.
    Missing,
    /// `Result<T, E>`, or an alias written `Result<T>` (no `error` then).
    Result { ty: &'a Type, value: &'a Type, error: Option<&'a Type> },
    /// Anything else.
    Other(&'a Type),
}

impl<'a> Tool<'a> {
    pub fn new(args: Args, func: &'a ItemFn) -> Self {
        let mut receiver = None;
        let mut contexts = Vec::new();
        let mut params = Vec::new();
        for input in &func.sig.inputs {
            match input {
                FnArg::Receiver(r) => receiver = Some(r),
                FnArg::Typed(arg) => match call_context(&arg.ty) {
                    Some(by_shared_ref) => contexts.push(Context { arg, by_shared_ref }),
                    None => {
                        let ident = match &*arg.pat {
                            Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => {
                                Some(&pat.ident)
                            }
                            _ => None,
                        };
                        params.push(Param { arg, ident, index: params.len(), docs: docs(&arg.attrs) });
                    }
                },
            }
        }
        let mut future = None;
        let output = match &func.sig.output {
            ReturnType::Default => Output::Missing,
            ReturnType::Type(_, declared) => {
                let ty = match future_output(declared) {
                    Some(output) if func.sig.asyncness.is_none() => {
                        future = Some(&**declared);
                        output
                    }
                    _ => declared,
                };
                match generic_args("Result", ty).map(Iterator::collect::<Vec<_>>).as_deref() {
                    Some([value, rest @ ..]) => Output::Result { ty, value, error: rest.first().copied() },
                    _ => Output::Other(ty),
                }
            }
        };
        Tool { func, args, receiver, contexts, params, output, future }
    }

    pub fn name(&self) -> &Ident {
        &self.func.sig.ident
    }

    /// The tool's doc comment, line by line: its description for the model, unless `description`
    /// says otherwise.
    pub fn docs(&self) -> Vec<&'a Expr> {
        docs(&self.func.attrs)
    }

    /// The parameter a `target`, `slot` or `bulk` key names, if it names one.
    pub fn param(&self, given: &Given<Ident>) -> Option<&Param<'a>> {
        let name = given.parsed.as_ref()?;
        self.params.iter().find(|param| param.ident == Some(name))
    }

    /// The parameter a `target` or `slot` key names, unless it is the bulk items: the intent key never
    /// depends on the payload.
    pub fn key_part<'g>(&self, given: Option<&'g Given<Ident>>) -> Option<(&'g Given<Ident>, &Param<'a>)> {
        let given = given?;
        let param = self.param(given)?;
        let bulk = self.args.bulk.as_ref().and_then(|bulk| self.param(bulk));
        match bulk {
            Some(bulk) if bulk.index == param.index => None,
            _ => Some((given, param)),
        }
    }

    /// The parameter holding the bulk items, when `bulk` names a `Vec` and the tool returns
    /// `Result<Vec<Item>, E>`.
    pub fn bulk(&self) -> Option<&Param<'a>> {
        let param = self.param(self.args.bulk.as_ref()?)?;
        vec_item(&param.arg.ty)?;
        self.returns_items().then_some(param)
    }

    /// Whether the tool returns `Result<Vec<Item>, E>`, as a bulk tool does.
    pub fn returns_items(&self) -> bool {
        let Output::Result { value, .. } = self.output else { return false };
        match vec_item(value) {
            Some(Type::Path(TypePath { qself: None, path })) => {
                path.segments.last().is_some_and(|last| last.ident == "Item")
            }
            _ => false,
        }
    }

    /// Whether the value type says nothing an agent can act on: `bool`, `Option<bool>`.
    pub fn value_is_bool(&self) -> bool {
        let ty = match self.output {
            Output::Missing => return false,
            Output::Result { value, .. } => value,
            Output::Other(ty) => ty,
        };
        is_bool(ty) || option_value(ty).is_some_and(is_bool)
    }

    /// Whether the receiver is `&self`, the one receiver a tool can have: every attempt borrows it again.
    pub fn receiver_is_shared_ref(&self) -> bool {
        self.receiver
            .is_none_or(|r| r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none())
    }
}

impl Param<'_> {
    /// The parameter's name in the wrapper: the author's when there is one.
    pub fn name(&self) -> Ident {
        match self.ident {
            Some(ident) => ident.clone(),
            None => Ident::new(&format!("__arg{}", self.index), Span::mixed_site()),
        }
    }
}

/// The values of `#[doc = ...]` attributes (what `///` comments become), in order.
fn docs(attrs: &[Attribute]) -> Vec<&Expr> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(doc) if doc.path.is_ident("doc") => Some(&doc.value),
            _ => None,
        })
        .collect()
}

/// Whether a type holds `impl Trait`, which names no type a model's JSON could be decoded into.
pub fn has_impl_trait(ty: &Type) -> bool {
    fn scan(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => ident == "impl",
            proc_macro2::TokenTree::Group(group) => scan(group.stream()),
            _ => false,
        })
    }
    scan(quote::ToTokens::to_token_stream(ty))
}

/// `Some(true)` for `&Call`, `Some(false)` for `Call` in any other form, `None` for anything else.
fn call_context(ty: &Type) -> Option<bool> {
    let (inner, shared_ref) = match ty {
        Type::Reference(r) => (&*r.elem, r.mutability.is_none()),
        other => (other, false),
    };
    match inner {
        Type::Path(TypePath { qself: None, path }) => {
            let last = path.segments.last()?;
            (last.ident == "Call" && last.arguments.is_none()).then_some(shared_ref)
        }
        _ => None,
    }
}

/// `X` of `impl Future<Output = X>`, `Pin<Box<dyn Future<Output = X> + Send>>` or `BoxFuture<'_, X>`:
/// what a function that returns a future instead of being `async` produces.
pub fn future_output(ty: &Type) -> Option<&Type> {
    fn from_bounds(
        bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>,
    ) -> Option<&Type> {
        bounds.iter().find_map(|bound| {
            let syn::TypeParamBound::Trait(bound) = bound else { return None };
            let last = bound.path.segments.last()?;
            if last.ident != "Future" {
                return None;
            }
            let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::AssocType(assoc) if assoc.ident == "Output" => Some(&assoc.ty),
                _ => None,
            })
        })
    }
    match ty {
        Type::ImplTrait(impl_trait) => from_bounds(&impl_trait.bounds),
        Type::TraitObject(object) => from_bounds(&object.bounds),
        Type::Paren(inner) => future_output(&inner.elem),
        Type::Group(inner) => future_output(&inner.elem),
        Type::Path(TypePath { qself: None, path }) => {
            let last = path.segments.last()?;
            match last.ident.to_string().as_str() {
                "Pin" | "Box" => generic_args(&last.ident.to_string(), ty)?.next().and_then(future_output),
                "BoxFuture" | "LocalBoxFuture" => generic_args(&last.ident.to_string(), ty)?.next(),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `I` of `Vec<I>`.
pub fn vec_item(ty: &Type) -> Option<&Type> {
    generic_args("Vec", ty)?.next()
}

/// `T` of `Option<T>`.
/// `ty` without the parentheses or invisible groups around it.
pub fn peeled(ty: &Type) -> &Type {
    match ty {
        Type::Paren(inner) => peeled(&inner.elem),
        Type::Group(inner) => peeled(&inner.elem),
        other => other,
    }
}

pub fn option_value(ty: &Type) -> Option<&Type> {
    generic_args("Option", ty)?.next()
}

fn generic_args<'t>(name: &str, ty: &'t Type) -> Option<impl Iterator<Item = &'t Type>> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let last = path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    Some(args.args.iter().filter_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    }))
}

/// Whether `ty` is `bool`, however it is parenthesised.
pub fn is_bool(ty: &Type) -> bool {
    match ty {
        Type::Path(TypePath { qself: None, path }) => path.is_ident("bool"),
        Type::Paren(inner) => is_bool(&inner.elem),
        Type::Group(inner) => is_bool(&inner.elem),
        _ => false,
    }
}
