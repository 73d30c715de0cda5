//! How a parameter a model hands as JSON is decoded and lent: the owned type it is decoded into, and
//! its lifetimes renamed.

use syn::visit_mut::VisitMut;
use syn::{Ident, Lifetime, Type};

use crate::ast::{option_value, peeled};

/// How a parameter is handed its decoded value.
#[derive(Clone, Copy)]
pub(super) enum Lent {
    /// As it was decoded.
    No,
    /// `&T`, lent from the decoded `T::Owned`.
    Ref,
    /// `Option<&T>`, lent from the decoded `Option<T::Owned>`.
    OptionRef,
}

/// The type a parameter is decoded into: itself, or for `&T` what `T` owns (`String` for `&str`) and
/// for `Option<&T>` an option of it, with every lifetime `'static` (a decoded value borrows nothing).
pub(super) fn owned(ty: &Type) -> (Type, Lent) {
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

pub(super) fn with_static_lifetimes(ty: &Type) -> Type {
    with_lifetimes(ty, "static")
}

/// `ty` with every named lifetime made `'_`: the type of a local borrowed from a decoded argument.
pub(super) fn with_anonymous_lifetimes(ty: &Type) -> Type {
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
