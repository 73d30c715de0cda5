//! A store's answer: given at once by an embedded store, or a future for one across the network.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::BoxFuture;

/// The answer of a store: given at once by an embedded store, or a future for one across the network.
///
/// It is a future either way; one that is ready costs no allocation.
#[must_use = "an answer does nothing unless awaited"]
pub struct Answer<'a, T>(AnswerInner<'a, T>);

enum AnswerInner<'a, T> {
    Now(Option<T>),
    Later(BoxFuture<'a, T>),
}

impl<'a, T> Answer<'a, T> {
    /// An answer known now.
    pub fn now(value: T) -> Answer<'a, T> {
        Answer(AnswerInner::Now(Some(value)))
    }

    /// An answer to wait for.
    pub fn later(future: impl Future<Output = T> + Send + 'a) -> Answer<'a, T> {
        Answer(AnswerInner::Later(Box::pin(future)))
    }

    /// Run `after` once the answer is known: at once for an answer known now.
    pub(super) fn then(self, after: impl FnOnce() + Send + 'a) -> Answer<'a, T>
    where
        T: Send + 'a,
    {
        match self.0 {
            AnswerInner::Now(value) => {
                after();
                Answer(AnswerInner::Now(value))
            }
            AnswerInner::Later(future) => Answer::later(async move {
                let value = future.await;
                after();
                value
            }),
        }
    }

    /// The answer when it is known now, or the future to wait for it.
    pub(crate) fn known(self) -> Result<T, BoxFuture<'a, T>>
    where
        T: Send + 'a,
    {
        match self.0 {
            AnswerInner::Now(Some(value)) => Ok(value),
            AnswerInner::Later(future) => Err(future),
            // Taken already (polled to the end): nothing more will come.
            AnswerInner::Now(None) => Err(Box::pin(std::future::pending())),
        }
    }

    /// The answer, when it is known without waiting (an embedded store's); `None` for one that needs
    /// awaiting.
    pub fn ready(self) -> Option<T> {
        match self.0 {
            AnswerInner::Now(value) => value,
            AnswerInner::Later(_) => None,
        }
    }
}

// No part of an `Answer` is pinned in place: the boxed future is pinned in its box.
impl<T> Unpin for Answer<'_, T> {}

impl<T> Future for Answer<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            AnswerInner::Now(value) => match value.take() {
                Some(value) => Poll::Ready(value),
                None => Poll::Pending,
            },
            AnswerInner::Later(future) => future.as_mut().poll(cx),
        }
    }
}

impl<T> std::fmt::Debug for Answer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            AnswerInner::Now(_) => "Answer::now",
            AnswerInner::Later(_) => "Answer::later",
        })
    }
}
