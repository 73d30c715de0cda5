//! Logging in and out of a console: a token (or the printed address's one-time ticket) exchanged for
//! a session by a same-origin `POST`, the session cookie, and the same-origin check every `POST`
//! passes.

use std::net::IpAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{COOKIE, ORIGIN, RETRY_AFTER, SET_COOKIE};
use hyper::{Request, Response, StatusCode};

use crate::door::constant_time_eq;
use crate::http::{form_value, html, redirect, text};
use crate::{Console, door, pages};

/// Whose session a request's cookies name.
pub(crate) enum Cookie {
    /// No live session.
    None,
    /// The live session `id`, held by `by`.
    Session { id: String, by: String },
    /// More than one cookie of the console's name, with different values: another page of this host
    /// set one (cookies are shared by every port of a host). Nothing is done under either.
    Tossed,
}

impl Console {
    /// The login page a `GET` answers: never a session. With the printed address's `ticket`, a
    /// button that logs in with it (a `POST` of this origin); else the token prompt.
    pub(crate) fn login_page(&self, query: &str) -> Response<Full<Bytes>> {
        match form_value(query, "ticket") {
            Some(ticket) => html(StatusCode::OK, pages::ticket_prompt(&self.inner.base, &ticket)),
            None => html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base, None)),
        }
    }

    /// Exchange the token or the ticket in `form` (a form body) for a session: the console's token or
    /// ticket, under the console's `by`, or an operator's token, under their name. A client with too
    /// many failures lately waits [`door::THROTTLE`] first, and a wrong token then is answered 429.
    pub(crate) async fn login(&self, form: &str, peer: IpAddr) -> Response<Full<Bytes>> {
        let throttled = self.inner.logins.wait(peer);
        if throttled.is_some() {
            tokio::time::sleep(door::THROTTLE).await;
        }
        let by = match form_value(form, "ticket") {
            Some(ticket) if self.inner.ticket.take(&ticket) => Some(self.inner.by.clone()),
            Some(_) => None,
            None => self.who(form_value(form, "token").unwrap_or_default()).await,
        };
        let Some(by) = by else {
            self.inner.logins.failed(peer);
            if let Some(wait) = self.inner.logins.wait(peer).filter(|_| throttled.is_some()) {
                let mut response = text(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many failed logins from this address: each try now waits a second",
                );
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                if let Ok(value) = secs.max(1).to_string().parse() {
                    response.headers_mut().insert(RETRY_AFTER, value);
                }
                return response;
            }
            let why = "That token (or the address's one-time link, once used) logs no one in.";
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base, Some(why)));
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

    /// Whose token `given` is: the name a session of it records as `by`. An operator's token is
    /// checked against every operator's slow hash, off the async runtime.
    async fn who(&self, given: String) -> Option<String> {
        if given.is_empty() {
            return None;
        }
        if let Some((token, until)) = &self.inner.token {
            let fresh = until.is_none_or(|until| tokio::time::Instant::now() < until);
            return (fresh && constant_time_eq(given.as_bytes(), token.as_bytes()))
                .then(|| self.inner.by.clone());
        }
        if self.inner.operators.is_empty() {
            return None;
        }
        let console = self.clone();
        tokio::task::spawn_blocking(move || {
            // Every operator's hash is checked, whichever matches.
            let mut found = None;
            for operator in &console.inner.operators {
                if operator.lets_in(&given) {
                    found = Some(operator.name.clone());
                }
            }
            found
        })
        .await
        .ok()
        .flatten()
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

    /// The session cookie: `HttpOnly`, `SameSite=Strict`; over TLS `Secure` and named `__Host-...`
    /// (which a browser takes only from this host over TLS, for the path `/`).
    fn set_cookie(&self, response: &mut Response<Full<Bytes>>, value: &str, max_age: Option<u64>) {
        let name = &self.inner.cookie;
        let path = if self.inner.secure { "/".to_owned() } else { format!("{}/", self.inner.base) };
        let mut cookie = format!("{name}={value}; HttpOnly; SameSite=Strict; Path={path}");
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

    /// The live session the request's cookie names, and who holds it; [`Cookie::Tossed`] when the
    /// request carries two different cookies of the console's name.
    pub(crate) fn session_of<B>(&self, request: &Request<B>) -> Cookie {
        let cookies = request.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok());
        let mut value: Option<&str> = None;
        for (name, given) in cookies.flat_map(|c| c.split(';')).filter_map(|c| c.trim().split_once('=')) {
            if name != self.inner.cookie {
                continue;
            }
            match value {
                Some(seen) if seen != given => return Cookie::Tossed,
                _ => value = Some(given),
            }
        }
        match value.and_then(|id| self.inner.sessions.find(id).map(|by| (id, by))) {
            Some((id, by)) => Cookie::Session { id: id.to_owned(), by },
            None => Cookie::None,
        }
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
