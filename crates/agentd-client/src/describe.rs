//! Errors as one line a person can act on: the error and its causes.

use std::error::Error;

/// `what: cause: cause`. An HTTP client error says what kind of failure it
/// was ("timed out", "could not connect", "request failed") instead of its
/// own text, which names the URL, and a URL may carry credentials. A cause
/// that repeats its predecessor's text is not repeated.
pub fn describe(e: &(dyn Error + 'static)) -> String {
    let mut out = match e.downcast_ref::<reqwest::Error>() {
        Some(r) if r.is_timeout() => "timed out".to_owned(),
        Some(r) if r.is_connect() => "could not connect".to_owned(),
        Some(_) => "request failed".to_owned(),
        None => e.to_string(),
    };
    let mut last = e.to_string();
    for cause in chain(e).skip(1) {
        let text = cause.to_string();
        if text != last {
            out.push_str(": ");
            out.push_str(&text);
        }
        last = text;
    }
    out
}

/// The innermost cause's text, which says what actually went wrong
/// ("Connection refused") without the wrapping around it.
pub fn root_cause(e: &(dyn Error + 'static)) -> String {
    chain(e).last().map(ToString::to_string).unwrap_or_default()
}

/// The error and its sources, outermost first.
fn chain<'a>(e: &'a (dyn Error + 'static)) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(e), |&e| e.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct E {
        text: &'static str,
        #[source]
        source: Option<Box<E>>,
    }

    fn e(text: &'static str, source: Option<E>) -> E {
        E { text, source: source.map(Box::new) }
    }

    #[test]
    fn the_chain_in_one_line_and_its_root() {
        let err = e("reading the body", Some(e("connection reset", Some(e("os error 104", None)))));
        assert_eq!(describe(&err), "reading the body: connection reset: os error 104");
        assert_eq!(root_cause(&err), "os error 104");
        assert_eq!(describe(&e("alone", None)), "alone");
        assert_eq!(root_cause(&e("alone", None)), "alone");
        assert_eq!(describe(&e("same", Some(e("same", None)))), "same", "no stutter");
    }

    #[tokio::test]
    async fn http_errors_say_their_kind_and_not_their_url() {
        // A port nothing listens on: bind one, note it, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://user:secret@127.0.0.1:{port}/x?token=secret");
        let err = reqwest::get(&url).await.unwrap_err();
        let text = describe(&err);
        assert!(text.starts_with("could not connect: "), "{text}");
        assert!(!text.contains("secret"), "{text}");
        assert!(!root_cause(&err).contains("secret"));
    }
}
