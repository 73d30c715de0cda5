use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects every error found in one `#[tool]`, so the author sees them all in one build.
///
/// Dropping a `Ctxt` holding errors without calling [`Ctxt::check`] or [`Ctxt::discard`] panics: an
/// error found and never reported would let a wrong tool compile.
pub struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// An error spanning `tokens` (the first to the last of them, where the compiler can join spans).
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An error at one span.
    pub fn error_at<M: Display>(&self, span: Span, message: M) {
        self.syn_error(syn::Error::new(span, message));
    }

    pub fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().as_mut().expect("Ctxt used after check").push(error);
    }

    /// All errors, combined into one.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.borrow_mut().take().expect("Ctxt checked twice").into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }

    /// Drop the errors: for the lenient model the fallback builds after they were reported.
    pub fn discard(self) {
        self.errors.borrow_mut().take();
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}
