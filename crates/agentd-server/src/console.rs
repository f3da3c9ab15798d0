//! The web console (`docs/console.md`): static files embedded in the binary
//! and served under `/console/`. The console is an A2A client like any
//! other (JSON-RPC, SSE and agentd's extensions with the caller's bearer
//! token), so nothing here reads a task: these routes only hand out files.
//!
//! The files are a table of `include_bytes!`: a dozen files do not need an
//! embedding crate, and a test keeps the table equal to the directory.

use axum::Router;
use axum::extract::Path;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/console";

/// Same-origin only, no inline script or style, no framing: the console
/// loads nothing from outside the daemon and talks to nothing else.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $content_type:expr) => {
        Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!("../console/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of `console/`, by its path under `/console/`.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("console.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("lib/a2a.js", JS),
    asset!("lib/dom.js", JS),
    asset!("lib/feed.js", JS),
    asset!("lib/schema-form.js", JS),
    asset!("lib/tasks.js", JS),
    asset!("views/chat.js", JS),
    asset!("views/gate.js", JS),
    asset!("views/home.js", JS),
    asset!("views/reminders.js", JS),
    asset!("views/run.js", JS),
    asset!("views/runs.js", JS),
    asset!("views/signin.js", JS),
    asset!("views/task.js", JS),
];

/// A strong ETag per file from its content. Files change only with the
/// binary, but module URLs carry no fingerprint, so clients revalidate
/// (`no-cache`) and get 304 while the file is the same.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS.iter().map(|a| format!("\"{}\"", hex::encode(&Sha256::digest(a.body)[..16]))).collect()
    })
}

/// The console's routes, registered on the HTTP router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(CONSOLE_PATH, get(|| async { Redirect::permanent("/console/") }))
        .route(
            &format!("{CONSOLE_PATH}/"),
            get(|headers: HeaderMap| async move { serve("index.html", &headers) }),
        )
        .route(
            &format!("{CONSOLE_PATH}/{{*path}}"),
            get(|Path(path): Path<String>, headers: HeaderMap| async move { serve(&path, &headers) }),
        )
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.path == path) else {
        let mut r = (StatusCode::NOT_FOUND, format!("no console file {path:?}\n")).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        return r;
    };
    let (asset, etag) = (&ASSETS[i], &etags()[i]);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim().trim_start_matches("W/") == etag || t.trim() == "*"));
    let mut r = if fresh { StatusCode::NOT_MODIFIED.into_response() } else { asset.body.into_response() };
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::Request;
    use tower::ServiceExt;

    async fn get(path: &str, if_none_match: Option<&str>) -> Response {
        let mut req = Request::get(path);
        if let Some(tag) = if_none_match {
            req = req.header(header::IF_NONE_MATCH, tag);
        }
        routes::<()>().oneshot(req.body(Body::empty()).unwrap()).await.unwrap()
    }

    fn header_of(r: &Response, name: header::HeaderName) -> &str {
        r.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// Every file under `console/`, relative, sorted.
    fn files_on_disk() -> Vec<String> {
        fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/"));
                }
            }
        }
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
        let mut out = Vec::new();
        walk(&base, &base, &mut out);
        out.sort();
        out
    }

    #[test]
    fn every_file_of_the_console_directory_is_embedded_and_nothing_else() {
        let mut embedded: Vec<String> = ASSETS.iter().map(|a| a.path.to_owned()).collect();
        embedded.sort();
        assert_eq!(embedded, files_on_disk(), "the ASSETS table must list exactly the files of console/");
    }

    #[tokio::test]
    async fn the_index_is_served_with_its_type_a_csp_and_revalidation() {
        let r = get("/console/", None).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(header_of(&r, header::CONTENT_TYPE), "text/html; charset=utf-8");
        assert_eq!(header_of(&r, header::CACHE_CONTROL), "no-cache");
        assert_eq!(header_of(&r, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        let csp = header_of(&r, header::CONTENT_SECURITY_POLICY);
        for directive in
            ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]
        {
            assert!(csp.contains(directive), "{csp}");
        }
        let etag = header_of(&r, header::ETAG).to_owned();
        assert!(etag.starts_with('"') && etag.len() > 2, "{etag}");
        let again = get("/console/", Some(&etag)).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        assert!(String::from_utf8_lossy(&body).contains("<script type=\"module\" src=\"app.js\">"));
    }

    #[tokio::test]
    async fn modules_and_styles_have_the_types_browsers_require() {
        for (path, ty) in [
            ("/console/app.js", "text/javascript; charset=utf-8"),
            ("/console/lib/a2a.js", "text/javascript; charset=utf-8"),
            ("/console/console.css", "text/css; charset=utf-8"),
            ("/console/icon.svg", "image/svg+xml"),
        ] {
            let r = get(path, None).await;
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            assert_eq!(header_of(&r, header::CONTENT_TYPE), ty, "{path}");
        }
    }

    #[tokio::test]
    async fn the_bare_path_redirects_and_unknown_files_are_404() {
        let r = get("/console", None).await;
        assert_eq!(r.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(header_of(&r, header::LOCATION), "/console/");
        for path in ["/console/nope.js", "/console/../Cargo.toml", "/console/lib/", "/console/lib"] {
            assert_eq!(get(path, None).await.status(), StatusCode::NOT_FOUND, "{path}");
        }
    }
}
