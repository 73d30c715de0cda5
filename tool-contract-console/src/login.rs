//! Logging in and out of a console: the token exchanged for a session, the session cookie, and the
//! same-origin check every `POST` passes.

use std::net::IpAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{COOKIE, ORIGIN, RETRY_AFTER, SET_COOKIE};
use hyper::{Request, Response, StatusCode};

use crate::http::{form_value, html, redirect, text};
use crate::{Console, door, pages};

impl Console {
    /// Exchange the token in `form` (a query string or a form body) for a session: the console's
    /// token, under the console's `by`, or an operator's, under their name. Too many failures from
    /// one client lately are answered 429 without looking at the token.
    pub(crate) fn login(&self, form: &str, peer: IpAddr) -> Response<Full<Bytes>> {
        if let Some(wait) = self.inner.logins.wait(peer) {
            let mut response = text(
                StatusCode::TOO_MANY_REQUESTS,
                "too many failed logins from this address: wait a minute, then try again",
            );
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(value) = secs.max(1).to_string().parse() {
                response.headers_mut().insert(RETRY_AFTER, value);
            }
            return response;
        }
        let given = form_value(form, "token").unwrap_or_default();
        let Some(by) = self.who(&given) else {
            self.inner.logins.failed(peer);
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base));
        };
        self.inner.logins.succeeded(peer);
        let id = match self.inner.sessions.open(&by) {
            Ok(id) => id,
            Err(why) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("no session could be opened: {why}"),
                );
            }
        };
        let mut response = redirect(&format!("{}/", self.inner.base));
        self.set_cookie(&mut response, &id, None);
        response
    }

    /// Whose token `given` is: the name a session of it records as `by`.
    fn who(&self, given: &str) -> Option<String> {
        if given.is_empty() {
            return None;
        }
        if let Some((token, until)) = &self.inner.token {
            let fresh = until.is_none_or(|until| tokio::time::Instant::now() < until);
            return (fresh && constant_time_eq(given.as_bytes(), token.as_bytes()))
                .then(|| self.inner.by.clone());
        }
        let given = door::digest(given.as_bytes());
        // Every digest is compared, whichever matches.
        let mut found = None;
        for operator in &self.inner.operators {
            if constant_time_eq(&given, &operator.token_sha256) {
                found = Some(operator.name.clone());
            }
        }
        found
    }

    /// End the session (if there is one) and clear its cookie.
    pub(crate) fn logout<B>(&self, request: &Request<B>, session: Option<&str>) -> Response<Full<Bytes>> {
        if !self.same_origin(request) {
            return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
        }
        if let Some(id) = session {
            self.inner.sessions.end(id);
        }
        let mut response = redirect(&format!("{}/", self.inner.base));
        self.set_cookie(&mut response, "", Some(0));
        response
    }

    fn set_cookie(&self, response: &mut Response<Full<Bytes>>, value: &str, max_age: Option<u64>) {
        let (name, base) = (&self.inner.cookie, &self.inner.base);
        let mut cookie = format!("{name}={value}; HttpOnly; SameSite=Strict; Path={base}/");
        if self.inner.secure {
            cookie.push_str("; Secure");
        }
        if let Some(age) = max_age {
            cookie.push_str(&format!("; Max-Age={age}"));
        }
        if let Ok(cookie) = cookie.parse() {
            response.headers_mut().insert(SET_COOKIE, cookie);
        }
    }

    /// The live session the request's cookie names, and who holds it.
    pub(crate) fn session_of<B>(&self, request: &Request<B>) -> Option<(String, String)> {
        let cookies = request.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok());
        for pair in cookies.flat_map(|c| c.split(';')).filter_map(|c| c.trim().split_once('=')) {
            if pair.0 == self.inner.cookie
                && let Some(by) = self.inner.sessions.find(pair.1)
            {
                return Some((pair.1.to_owned(), by));
            }
        }
        None
    }

    /// A `POST` from this console's own pages: `Origin` is its own, or `Sec-Fetch-Site` says
    /// same-origin; one of them must be there, and neither may say otherwise. (`Origin: null`, which a
    /// browser sends when a page's referrer policy withholds it, says nothing.)
    pub(crate) fn same_origin<B>(&self, request: &Request<B>) -> bool {
        let origin = request.headers().get(ORIGIN).and_then(|v| v.to_str().ok()).filter(|o| *o != "null");
        let site = request.headers().get("sec-fetch-site").and_then(|v| v.to_str().ok());
        let origin_ok = origin.map(|o| o.eq_ignore_ascii_case(&self.inner.origin) || self.own_host_origin(o));
        let site_ok = site.map(|s| s == "same-origin");
        match (origin_ok, site_ok) {
            (None, None) => false,
            (o, s) => o.unwrap_or(true) && s.unwrap_or(true),
        }
    }

    fn own_host_origin(&self, origin: &str) -> bool {
        let scheme = if self.inner.secure { "https://" } else { "http://" };
        origin
            .strip_prefix(scheme)
            .is_some_and(|host| self.inner.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
