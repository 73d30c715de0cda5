//! What a console's forms do: settle an intent in doubt, or answer an approval, through the source,
//! then go back to the intent's page saying what came of it.

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use tool_contract::IntentKey;
use tool_contract::journal::Verdict;
use tool_contract::person::{Decision, Settle};

use crate::http::{form_value, read_form, redirect, text};
use crate::{Console, pages};

impl Console {
    pub(crate) async fn post<B>(
        &self,
        request: Request<B>,
        path: &str,
        session: &str,
        by: String,
    ) -> Response<Full<Bytes>>
    where
        B: hyper::body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if self.inner.read_only {
            return text(StatusCode::FORBIDDEN, "this console is read-only");
        }
        if !self.same_origin(&request) {
            return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
        }
        let Some((key, action)) = path.strip_prefix("/intent/").and_then(|p| p.split_once('/')) else {
            return text(StatusCode::NOT_FOUND, "no such action");
        };
        if action != "settle" && action != "approval" {
            return text(StatusCode::NOT_FOUND, "no such action");
        }
        let Ok(key) = IntentKey::parse(key) else { return text(StatusCode::NOT_FOUND, "no such intent") };
        let form = match read_form(request).await {
            Ok(form) => form,
            Err(response) => return response,
        };
        if action == "approval" {
            return self.approval(session, &key, &form, by).await;
        }
        let verdict = match form_value(&form, "verdict").as_deref() {
            Some("landed") => Verdict::Landed,
            Some("not_landed") => Verdict::NotLanded,
            _ => return self.back(session, &key, "Nothing settled: say landed or not landed."),
        };
        // The attempt the page showed: a settlement is recorded on it, or refused if another started.
        let Some(attempt) = form_value(&form, "attempt").and_then(|a| a.parse::<u32>().ok()) else {
            return self.back(
                session,
                &key,
                "Nothing settled: the form names no attempt; open the intent's page again.",
            );
        };
        let evidence = form_value(&form, "evidence").unwrap_or_default();
        let mut settle = Settle::new(verdict, by, evidence);
        // When the page showed the attempt: the person's word is judged by it.
        let now = tool_contract::unstable::wall_clock();
        match form_value(&form, "shown").as_deref().map(tool_contract::unstable::parse_rfc3339) {
            Some(Some(shown)) if shown <= now => settle = settle.seen(shown),
            _ if verdict == Verdict::NotLanded => {
                return self.back(
                    session,
                    &key,
                    "Nothing settled: the form does not say when its page showed the attempt; open the intent's page again.",
                );
            }
            _ => {}
        }
        let said = match self.inner.source.settle(key, attempt, settle).await {
            Ok(record) => match tool_contract::person::early_note(&record) {
                Some(note) => format!("Settled: {}. Note: {note}.", record.message.unwrap_or_default()),
                None => format!("Settled: {}", record.message.unwrap_or_default()),
            },
            Err(e) => format!("Not settled: {e}"),
        };
        self.back(session, &key, &said)
    }

    /// What this console's forms may do, saying `said` at the top of the page.
    pub(crate) fn settling<'a>(&'a self, said: Option<&'a str>, by: &'a str) -> pages::Settling<'a> {
        pages::Settling { read_only: self.inner.read_only, by, said, base: &self.inner.base }
    }

    /// Answer a question from the approval form: yes or no to the attempt it names, with why.
    async fn approval(
        &self,
        session: &str,
        key: &IntentKey,
        form: &str,
        by: String,
    ) -> Response<Full<Bytes>> {
        let attempt = form_value(form, "attempt").and_then(|a| a.parse::<u32>().ok());
        let why = form_value(form, "why").unwrap_or_default();
        let decision = match (form_value(form, "decision").as_deref(), attempt) {
            (Some("approve"), Some(_)) => Decision::approve(by, why),
            (Some("deny"), Some(_)) => Decision::deny(by, why),
            _ => {
                return self.back(
                    session,
                    key,
                    "Nothing answered: approve or deny the attempt the form names.",
                );
            }
        };
        let said = match self.inner.source.answer(*key, attempt.unwrap_or(0), decision).await {
            Ok(record) => format!("Answered: {}", record.message.unwrap_or_default()),
            Err(e) => format!("Not answered: {e}"),
        };
        self.back(session, key, &said)
    }

    /// Back to the intent's page, saying `said`: kept in the session, and named in the address by an
    /// id of its own (a link cannot put words on the page).
    fn back(&self, session: &str, key: &IntentKey, said: &str) -> Response<Full<Bytes>> {
        match self.inner.sessions.note(session, said.to_owned()) {
            Some(note) => redirect(&format!("{}/intent/{key}?said={note}", self.inner.base)),
            None => redirect(&format!("{}/intent/{key}", self.inner.base)),
        }
    }
}
