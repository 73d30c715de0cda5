//! The HTTP routing of a console: the `Host` check, the login and logout paths, the session gate, and
//! the pages answered to a `GET`.

use std::net::{IpAddr, Ipv4Addr};
use std::time::SystemTime;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::HOST;
use hyper::{Method, Request, Response, StatusCode};
use tool_contract::IntentKey;

use crate::http::{decode, form_value, html, read_form, redirect, text};
use crate::login::Cookie;
use crate::{Console, Peer, pages};

impl Console {
    /// Answer one request: what a host of its own mounts (its path as this console's, from `/`). Every
    /// answer carries the console's security headers: a content security policy with no script and no
    /// framing, `Referrer-Policy`, `X-Content-Type-Options`, `Cache-Control: no-store`, and HSTS over
    /// TLS.
    pub async fn answer<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
    where
        B: hyper::body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut response = self.route(request).await;
        crate::http::secure(&mut response, self.inner.secure);
        response
    }

    async fn route<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
    where
        B: hyper::body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let host = request.headers().get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !self.inner.hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host)) {
            return text(StatusCode::FORBIDDEN, "this console answers only to its own address (Host)");
        }
        let base = self.inner.base.as_str();
        let Some(path) = request.uri().path().strip_prefix(base).map(str::to_owned) else {
            return text(StatusCode::NOT_FOUND, "not the console's path");
        };
        if path.is_empty() {
            return redirect(&format!("{base}/"));
        }
        let query = request.uri().query().unwrap_or("").to_owned();
        let peer = request.extensions().get::<Peer>().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.ip());
        if path == "/login" && request.method() == Method::GET {
            // A link (of anyone's page) logs no one in: the login is a form of this origin.
            return self.login_page(&query);
        }
        if path == "/login" && request.method() == Method::POST {
            if !self.same_origin(&request) {
                return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
            }
            return match read_form(request).await {
                Ok(form) => self.login(&form, peer).await,
                Err(response) => response,
            };
        }
        let (id, by) = match self.session_of(&request) {
            Cookie::Session { id, by } => (id, by),
            Cookie::Tossed => {
                let why = "Two session cookies of this console's name reached it: a page of another port \
                           or name of this host set one. Nothing is done under either: clear this host's \
                           cookies in the browser, then log in again.";
                return html(StatusCode::FORBIDDEN, pages::problem("Two session cookies", why, base));
            }
            Cookie::None => {
                if path == "/logout" && request.method() == Method::POST {
                    return self.logout(&request, None);
                }
                return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base, None));
            }
        };
        if path == "/logout" && request.method() == Method::POST {
            return self.logout(&request, Some(&id));
        }
        match *request.method() {
            Method::GET => self.get(&path, &query, &id, &by).await,
            Method::POST => self.post(request, &path, &id, by).await,
            _ => text(StatusCode::METHOD_NOT_ALLOWED, "GET or POST"),
        }
    }

    async fn get(&self, path: &str, query: &str, session: &str, by: &str) -> Response<Full<Bytes>> {
        let base = self.inner.base.as_str();
        let failed = |why: String| {
            html(StatusCode::INTERNAL_SERVER_ERROR, pages::problem("The store cannot be read", &why, base))
        };
        let now = SystemTime::now();
        let source = &self.inner.source;
        if path == "/" {
            let q = form_value(query, "q").map(|q| q.trim().to_owned()).filter(|q| !q.is_empty());
            let found = match &q {
                Some(q) => match source.search(q).await {
                    Ok(found) => Some(found),
                    Err(why) => return failed(why),
                },
                None => None,
            };
            let view = match source.overview(now).await {
                Ok(view) => view,
                Err(why) => return failed(why),
            };
            let found = q.as_deref().zip(found.as_ref()).map(|(q, f)| (q, f.iter().collect()));
            let said = self.said(query, session);
            let settling = self.settling(said.as_deref(), by);
            return html(StatusCode::OK, pages::overview(&view, now, found, &settling));
        }
        if let Some(task) = path.strip_prefix("/task/") {
            let task = decode(task);
            return match source.task(&task).await {
                Ok(recalls) => html(StatusCode::OK, pages::task(&recalls, &task, now, base)),
                Err(why) => failed(why),
            };
        }
        if let Some(key) = path.strip_prefix("/intent/") {
            let Ok(key) = IntentKey::parse(key) else {
                return html(
                    StatusCode::NOT_FOUND,
                    pages::problem("No such intent", "an intent key is 32 lowercase hex characters", base),
                );
            };
            let (recall, records) = match source.intent(&key).await {
                Ok(Some(found)) => found,
                Ok(None) => {
                    return html(
                        StatusCode::NOT_FOUND,
                        pages::problem("No such intent", "the log holds nothing of it", base),
                    );
                }
                Err(why) => return failed(why),
            };
            let said = self.said(query, session);
            let settling = self.settling(said.as_deref(), by);
            return html(StatusCode::OK, pages::intent(&recall, &records, &settling, now));
        }
        html(StatusCode::NOT_FOUND, pages::problem("Not found", "no such page", base))
    }

    /// What the session's last action said, if the page's `?said=` names it: the console's own words,
    /// never text a link brings.
    fn said(&self, query: &str, session: &str) -> Option<String> {
        form_value(query, "said").and_then(|note| self.inner.sessions.said(session, &note))
    }
}
