//! What the `#[tool]` attribute's generated code reaches for. Not public API.
//!
//! The traits here exist for their messages: each bound the generated code places on an author's
//! token is one of these, so an unmet one says, on that token, what to write instead.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use crate::classify::Classify;
pub use crate::define::{Definition, Params};
pub use crate::effect::EffectKind;
pub use crate::engine::run;
pub use crate::engine::run_bulk;
pub use crate::probe::NoProbe;
pub use crate::spec::{Backoff, Dedupe, Jitter, ToolSpec};
pub use crate::toolbox::{
    Args, JsonAttempt, JsonProbe, ModelArg, ModelValue, ToolFn, Unwritten, into_json, json_answer,
    json_verdict, run_json,
};
pub use crate::{Call, IntentKey, Item, Probe, Report, Task};
pub use core::time::Duration;

pub use serde_json::Value;

/// A tool argument: each attempt gets its own copy, made by [`arg`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `Clone`, and a tool gives each attempt its own copy of its arguments",
    label = "copied for each attempt",
    note = "derive or implement `Clone` for `{Self}`, or take the argument by reference"
)]
pub trait Arg: Clone {}

impl<T: Clone> Arg for T {}

/// One attempt's copy of an argument.
pub fn arg<T: Arg>(value: &T) -> T {
    value.clone()
}

pub use crate::journal::LogValue as ToolValue;

/// A function of some arity, its argument types read from it (`M` is the tuple of them), so a probe is
/// compared with the signature the tool expects as a whole rather than argument by argument.
#[diagnostic::on_unimplemented(
    message = "`probe = ...` must name an `async fn`, and `{Self}` is not a function of at most 16 parameters",
    label = "not a probe"
)]
pub trait FnSig<M> {
    /// The argument types, as a tuple.
    type Args;
    /// What a call returns.
    type Output;
    /// Call with the arguments as a tuple.
    fn call_with(&self, args: Self::Args) -> Self::Output;
}

macro_rules! fn_sig {
    ($($arg:ident)*) => {
        impl<F, $($arg,)* R> FnSig<($($arg,)*)> for F
        where
            F: Fn($($arg),*) -> R,
        {
            type Args = ($($arg,)*);
            type Output = R;
            #[allow(non_snake_case)]
            fn call_with(&self, ($($arg,)*): Self::Args) -> R {
                self($($arg),*)
            }
        }
    };
}

fn_sig!(A);
fn_sig!(A B);
fn_sig!(A B C);
fn_sig!(A B C D);
fn_sig!(A B C D E);
fn_sig!(A B C D E G);
fn_sig!(A B C D E G H);
fn_sig!(A B C D E G H I);
fn_sig!(A B C D E G H I J);
fn_sig!(A B C D E G H I J K);
fn_sig!(A B C D E G H I J K L);
fn_sig!(A B C D E G H I J K L N);
fn_sig!(A B C D E G H I J K L N O);
fn_sig!(A B C D E G H I J K L N O P);
fn_sig!(A B C D E G H I J K L N O P Q);
fn_sig!(A B C D E G H I J K L N O P Q S);
fn_sig!(A B C D E G H I J K L N O P Q S U);

/// The arguments a probe takes (`Self`) are those the tool gives it (`E`).
#[diagnostic::on_unimplemented(
    message = "this probe takes `{Self}`, and a probe of this tool takes `{E}`",
    label = "expected `async fn{E} -> {V}`",
    note = "a probe borrows the tool's arguments in order (without the call context; `&self` first for a method), then takes the `IntentKey`"
)]
pub trait ProbeArgs<E, V> {
    /// The same tuple.
    fn cast(args: E) -> Self;
}

impl<E, V> ProbeArgs<E, V> for E {
    fn cast(args: E) -> E {
        args
    }
}

/// What a probe returns (`Self`) is a future of the tool's verdict (`V`).
#[diagnostic::on_unimplemented(
    message = "this probe returns `{Self}`, and a probe of this tool is `async fn{E} -> {V}`",
    label = "expected an `async fn` resolving to `{V}`",
    note = "a probe is a read that tells whether the attempt carrying the key landed; make it `async`"
)]
pub trait ProbeOutput<E, V> {
    /// Poll the future for the verdict.
    fn poll_verdict(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<V>;
}

impl<E, V, T: Future<Output = V>> ProbeOutput<E, V> for T {
    fn poll_verdict(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<V> {
        self.poll(cx)
    }
}

/// The future of a probe's verdict. Its type and its `Future` impl carry no bound on the probe: the
/// bounds are checked once, where [`ProbeCall::call`] builds it, so a probe that does not fit is one
/// error there and nothing after it (an opaque `impl Future` would be checked a second time).
pub struct ProbeFuture<T, V> {
    probe: Pin<Box<T>>,
    poll: fn(Pin<&mut T>, &mut Context<'_>) -> Poll<V>,
}

impl<T, V> Future for ProbeFuture<T, V> {
    type Output = V;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<V> {
        let this = self.get_mut();
        (this.poll)(this.probe.as_mut(), cx)
    }
}

/// A probe, its signature read but not yet checked: see [`ProbeCall::call`].
pub struct ProbeCall<'f, F, M>(&'f F, PhantomData<M>);

/// The probe named by `probe = ...`.
pub fn probe_fn<F: FnSig<M>, M>(probe: &F) -> ProbeCall<'_, F, M> {
    ProbeCall(probe, PhantomData)
}

impl<'f, F: FnSig<M>, M> ProbeCall<'f, F, M> {
    /// Calls the probe with `args` and awaits a `V`. The bounds are checked here, after the probe's own
    /// signature is known, so a mismatch is reported as a whole, once, on the `probe = ...` path.
    pub fn call<E, V>(self, args: E) -> ProbeFuture<F::Output, V>
    where
        F::Args: ProbeArgs<E, V>,
        F::Output: ProbeOutput<E, V>,
    {
        let probe = Box::pin(self.0.call_with(<F::Args as ProbeArgs<E, V>>::cast(args)));
        ProbeFuture { probe, poll: <F::Output as ProbeOutput<E, V>>::poll_verdict }
    }
}
