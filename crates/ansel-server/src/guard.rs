//! What every request passes before a route sees it: the Host allow-list (against DNS
//! rebinding), the API key, the in-flight limit, a JSON content type on POST, and the body read
//! within its time and size limits. Answers in the JSON error shape of every route.

use crate::{ApiError, AppState};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Who may call the server, and from which pages.
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// Required as `Authorization: Bearer KEY` on every route but `/health`.
    pub api_key: Option<String>,
    /// Host names (without port) a request's `Host` header may carry; empty: any.
    pub allowed_hosts: Vec<String>,
    /// The one origin whose pages may call the API from a browser (CORS); none by default.
    pub cors_origin: Option<String>,
}

impl Security {
    /// The default Host allow-list for a server bound to `ip`: localhost names and the bound
    /// address; a server bound to every address (0.0.0.0, ::) cannot know its names, so it
    /// allows any unless `extra` names some.
    pub fn hosts_for(ip: IpAddr, extra: &[String]) -> Vec<String> {
        if ip.is_unspecified() && extra.is_empty() {
            return Vec::new();
        }
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|h| h.to_string())
            .collect();
        if !ip.is_unspecified() {
            hosts.push(ip.to_string());
        }
        hosts.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
        hosts
    }
}

/// When a request arrived: deadlines (and the `/ask` budget) count from here.
#[derive(Debug, Clone, Copy)]
pub struct Arrival(pub Instant);

/// The host part of a `Host` header: `name`, `name:port`, `[v6]:port`.
fn host_name(value: &str) -> String {
    let value = value.trim().to_ascii_lowercase();
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_string();
    }
    match value.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name.to_string(),
        _ => value,
    }
}

fn bearer_matches(value: Option<&HeaderValue>, key: &str) -> bool {
    // The scheme is case-insensitive (RFC 9110 11.1): `bearer KEY` is as good as `Bearer KEY`.
    let Some(given) = value.and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, rest) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then_some(rest)
    }) else {
        return false;
    };
    // Constant time in the key's length: no early exit on the first differing byte.
    given.len() == key.len()
        && given
            .bytes()
            .zip(key.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn is_json(value: Option<&HeaderValue>) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// The middleware itself (`axum::middleware::from_fn_with_state`).
pub async fn guard(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let arrival = Instant::now();
    let security = &state.security;
    let cors = security.cors_origin.clone();
    let mut response = check(&state, arrival, request, next).await;
    if let Some(origin) = cors.and_then(|o| HeaderValue::from_str(&o).ok()) {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
    }
    response
}

/// Largest request head (request line and headers, as sent) the server answers; larger ones get
/// 431. hyper's read buffer lets heads of up to about 112 KiB through, so the cap is checked here.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The bytes of `request`'s head as it was sent: request line, headers, blank line.
fn head_bytes(request: &Request) -> usize {
    // "METHOD URI HTTP/1.1\r\n"
    let line = request.method().as_str().len()
        + 1
        + request.uri().to_string().len()
        + " HTTP/1.1\r\n".len();
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    line + headers + 2
}

async fn check(state: &AppState, arrival: Instant, request: Request, next: Next) -> Response {
    let security = &state.security;
    let limits = &state.limits;
    // HTTP/1.1 requests carry exactly one Host (RFC 9112 3.2): none, or two that may disagree,
    // is a client error, not a request for the first one named.
    let hosts = request.headers().get_all(header::HOST).iter().count();
    if request.version() == axum::http::Version::HTTP_11 && hosts != 1 {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "Validation",
            format!("an HTTP/1.1 request needs exactly one Host header; this one has {hosts}"),
        )
        .into_response();
    }
    let head = head_bytes(&request);
    if head > MAX_HEAD_BYTES {
        return ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "Validation",
            format!("the request head has {head} bytes, more than the limit of {MAX_HEAD_BYTES}"),
        )
        .into_response();
    }
    if let Some(host) = request.headers().get(header::HOST) {
        let name = host_name(host.to_str().unwrap_or(""));
        if !security.allowed_hosts.is_empty() && !security.allowed_hosts.contains(&name) {
            return ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "Validation",
                format!("host {name:?} is not served here (allow it with --allow-host)"),
            )
            .into_response();
        }
    }
    if request.method() == Method::OPTIONS && security.cors_origin.is_some() {
        return StatusCode::NO_CONTENT.into_response();
    }
    if let Some(key) = &security.api_key {
        if request.uri().path() != "/health"
            && !bearer_matches(request.headers().get(header::AUTHORIZATION), key)
        {
            let mut response = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized",
                "missing or wrong API key (send `Authorization: Bearer KEY`)",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let Ok(_permit) = state.in_flight.clone().try_acquire_owned() else {
        return ApiError::overloaded(
            "too many requests in flight; retry later",
            Duration::from_secs(1),
        )
        .into_response();
    };
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(Arrival(arrival));
    if parts.method != Method::POST {
        return next.run(Request::from_parts(parts, body)).await;
    }
    if !is_json(parts.headers.get(header::CONTENT_TYPE)) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Validation",
            "POST bodies must be sent with `Content-Type: application/json`",
        )
        .into_response();
    }
    let limit = limits.max_body_bytes;
    let read = axum::body::to_bytes(body, limit);
    let bytes = match tokio::time::timeout(limits.body_timeout, read).await {
        Err(_) => {
            return ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "Validation",
                format!(
                    "the request body did not arrive within {} ms",
                    limits.body_timeout.as_millis()
                ),
            )
            .into_response()
        }
        Ok(Err(e)) => {
            let e = e.into_inner();
            return if e.is::<http_body_util::LengthLimitError>() {
                ApiError::too_large(format!("request body is larger than {limit} bytes"))
            } else {
                ApiError::new(StatusCode::BAD_REQUEST, "Validation", e.to_string())
            }
            .into_response();
        }
        Ok(Ok(bytes)) => bytes,
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("example.com"), "example.com");
    }

    #[test]
    fn default_hosts_follow_the_bound_address() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(Security::hosts_for(loopback, &[]).contains(&"localhost".to_string()));
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(Security::hosts_for(any, &[]).is_empty());
        assert!(Security::hosts_for(any, &["Search.Example".into()])
            .contains(&"search.example".to_string()));
    }

    #[test]
    fn bearer_keys_must_match_exactly() {
        let v = |s: &str| HeaderValue::from_str(s).unwrap();
        assert!(bearer_matches(Some(&v("Bearer s3cret")), "s3cret"));
        assert!(!bearer_matches(Some(&v("Bearer s3cre")), "s3cret"));
        assert!(!bearer_matches(Some(&v("s3cret")), "s3cret"));
        assert!(!bearer_matches(None, "s3cret"));
    }
}
