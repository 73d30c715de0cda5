//! What is emitted when a tool is wrong: every error, and the wrapper as far as it can be built, so
//! callers and the body are still checked as usual and one mistake gives one error.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::ItemFn;

use crate::ast::Tool;
use crate::attr;
use crate::ctxt::Ctxt;
use crate::expand;

pub fn expand(args: TokenStream, func: &ItemFn, error: syn::Error) -> TokenStream {
    let ctxt = Ctxt::new();
    let tool = Tool::new(attr::parse(&ctxt, args), func);
    // Already reported in `error`.
    ctxt.discard();
    let item = expand::wrapper(&tool).unwrap_or_else(|| func.to_token_stream());
    let error = error.into_compile_error();
    quote!(#error #item)
}

/// `#[tool]` on something that is not a function with a body.
pub fn not_a_function(input: TokenStream) -> TokenStream {
    let error = syn::Error::new(
        Span::call_site(),
        "`#[tool]` goes on an `async fn` with a body, free or in an `impl` block",
    )
    .into_compile_error();
    quote!(#error #input)
}
