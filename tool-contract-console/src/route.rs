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
use crate::{Console, Peer, pages};

impl Console {
    /// Answer one request: what a host of its own mounts (its path as this console's, from `/`).
    pub async fn answer<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
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
            return self.login(&query, peer);
        }
        if path == "/login" && request.method() == Method::POST {
            if !self.same_origin(&request) {
                return text(StatusCode::FORBIDDEN, "a form of another origin is refused");
            }
            return match read_form(request).await {
                Ok(form) => self.login(&form, peer),
                Err(response) => response,
            };
        }
        let session = self.session_of(&request);
        if path == "/logout" && request.method() == Method::POST {
            return self.logout(&request, session.as_ref().map(|(id, _)| id.as_str()));
        }
        let Some((_, by)) = session else {
            return html(StatusCode::UNAUTHORIZED, pages::token_prompt(&self.inner.base));
        };
        match *request.method() {
            Method::GET => self.get(&path, &query, &by).await,
            Method::POST => self.post(request, &path, by).await,
            _ => text(StatusCode::METHOD_NOT_ALLOWED, "GET or POST"),
        }
    }

    async fn get(&self, path: &str, query: &str, by: &str) -> Response<Full<Bytes>> {
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
            let said = form_value(query, "said");
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
            let said = form_value(query, "said");
            let settling = self.settling(said.as_deref(), by);
            return html(StatusCode::OK, pages::intent(&recall, &records, &settling, now));
        }
        html(StatusCode::NOT_FOUND, pages::problem("Not found", "no such page", base))
    }
}
