//! The HTTP pieces every answer is made of: an HTML page with its security headers, a redirect, a
//! plain-text refusal, and reading and decoding a form.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{CONTENT_TYPE, HeaderValue, LOCATION};
use hyper::{Request, Response, StatusCode};
use maud::Markup;

/// The largest form a `POST` may carry.
const MAX_FORM: usize = 16 * 1024;

pub(crate) fn html(status: StatusCode, markup: Markup) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(markup.into_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response
}

/// The headers every answer of the console carries, a page, a redirect or a refusal alike: no
/// script, no frame, no sniffing, no caching, no address sent to another origin; over TLS, HTTPS
/// only from then on (HSTS).
pub(crate) fn secure(response: &mut Response<Full<Bytes>>, tls: bool) {
    let headers = response.headers_mut();
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    if tls {
        headers.insert("strict-transport-security", HeaderValue::from_static("max-age=31536000"));
    }
}

/// `303 See Other` to `location`.
pub(crate) fn redirect(location: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(location) = location.parse() {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

/// A form body of at most [`MAX_FORM`] bytes, as text; or the answer refusing it.
pub(crate) async fn read_form<B>(request: Request<B>) -> Result<String, Response<Full<Bytes>>>
where
    B: hyper::body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(request.into_body(), MAX_FORM).collect().await {
        Ok(body) => Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned()),
        Err(_) => Err(text(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large")),
    }
}

pub(crate) fn text(status: StatusCode, why: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{why}\n"))));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// The value of `name` in a query string or a form body, decoded.
pub(crate) fn form_value(form: &str, name: &str) -> Option<String> {
    form.split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(n, _)| decode(n) == name)
        .map(|(_, v)| decode(v))
}

/// Percent-decoding, with `+` as a space, as forms are sent; bytes that are not UTF-8 replaced.
pub(crate) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| char::from(c).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_as_browsers_send_them() {
        assert_eq!(decode("a+b%20c%3Cscript%3E"), "a b c<script>");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%e2%82%ac"), "€");
        assert_eq!(
            form_value("verdict=landed&evidence=on+the+statement", "evidence").as_deref(),
            Some("on the statement")
        );
        assert_eq!(form_value("verdict=landed", "evidence"), None);
    }
}
