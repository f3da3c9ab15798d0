//! The `openai` provider when things go wrong, against a real server on
//! 127.0.0.1:0: retries (Retry-After honoured and capped), failover, errors
//! not retried, timeouts, cancellation, and answers it cannot understand.

use crate::model_support::*;
use agentd_runtime::model::{ModelError, ModelProvider, OpenAiProvider};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_429_is_retried_after_the_retry_after_delay() {
    let mock = Mock::start(|n, _| match n {
        0 => error(429, "slow down", vec![("retry-after", "1".into())]),
        _ => stream_of(&["ok"]),
    })
    .await;
    let mut c = config(&[&mock.base]);
    c.http.max_backoff = Duration::from_secs(5);
    let (result, waited) = timed_call(&OpenAiProvider::new(c).unwrap(), &ask("hi")).await;
    assert_eq!(result.unwrap().text, "ok");
    assert_eq!(mock.hits(), 2);
    waited_for_retry_after(waited);
}

#[tokio::test]
async fn retry_after_is_capped_by_max_backoff() {
    let mock = Mock::start(|n, _| match n {
        0 => error(429, "come back in an hour", vec![("retry-after", "3600".into())]),
        _ => stream_of(&["ok"]),
    })
    .await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    let start = Instant::now();
    assert_eq!(call(&p, &ask("hi")).await.0.unwrap().text, "ok");
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
}

#[tokio::test]
async fn retries_exhausted_on_one_endpoint_fail_over_to_the_next() {
    let a = Mock::start(|_, _| error(500, "boom", vec![])).await;
    let b = Mock::start(|_, _| stream_of(&["from b"])).await;
    let mut c = config(&[&a.base, &b.base]);
    c.http.max_retries = 2;
    let p = OpenAiProvider::new(c).unwrap();
    let (result, deltas) = call(&p, &ask("hi")).await;
    assert_eq!(result.unwrap().text, "from b");
    assert_eq!(deltas, ["from b"]);
    assert_eq!((a.hits(), b.hits()), (3, 1), "1 try + 2 retries on A, then B");
    assert_eq!(a.received()[2].body, b.received()[0].body, "the same request everywhere");
}

#[tokio::test]
async fn when_every_endpoint_fails_the_last_error_is_returned() {
    let a = Mock::start(|_, _| error(503, "overloaded", vec![])).await;
    let dead = dead_endpoint().await;
    let mut c = config(&[&a.base, &dead]);
    c.http.max_retries = 1;
    let p = OpenAiProvider::new(c).unwrap();
    let err = call(&p, &ask("hi")).await.0.unwrap_err();
    assert!(matches!(&err, ModelError::Unavailable(m) if m.contains("cannot connect")), "{err}");
    assert_eq!(a.hits(), 2);

    let mut c = config(&[&a.base]);
    c.http.max_retries = 0;
    let err = call(&OpenAiProvider::new(c).unwrap(), &ask("hi")).await.0.unwrap_err();
    assert_eq!(err, ModelError::Http { status: 503, message: "overloaded".into() });
}

#[tokio::test]
async fn a_connect_error_fails_over() {
    let dead = dead_endpoint().await;
    let b = Mock::start(|_, _| stream_of(&["alive"])).await;
    let mut c = config(&[&dead, &b.base]);
    c.http.max_retries = 1;
    assert_eq!(call(&OpenAiProvider::new(c).unwrap(), &ask("hi")).await.0.unwrap().text, "alive");
}

#[tokio::test]
async fn a_400_is_surfaced_with_the_server_message_and_not_retried() {
    let a = Mock::start(|_, _| error(400, "The model `nope` does not exist", vec![])).await;
    let b = Mock::start(|_, _| stream_of(&["never"])).await;
    let p = OpenAiProvider::new(config(&[&a.base, &b.base])).unwrap();
    let err = call(&p, &ask("hi")).await.0.unwrap_err();
    assert_eq!(err, ModelError::Http { status: 400, message: "The model `nope` does not exist".into() });
    assert!(err.to_string().contains("does not exist"));
    assert_eq!((a.hits(), b.hits()), (1, 0));
}

#[tokio::test]
async fn a_slow_endpoint_times_out_then_fails_over() {
    let slow =
        Mock::start(|_, _| Reply::After(Duration::from_secs(30), Box::new(stream_of(&["late"])))).await;
    let fast = Mock::start(|_, _| stream_of(&["fast"])).await;
    let mut c = config(&[&slow.base, &fast.base]);
    c.http.timeout = Duration::from_millis(300);
    c.http.max_retries = 0;
    let p = OpenAiProvider::new(c.clone()).unwrap();
    let start = Instant::now();
    assert_eq!(call(&p, &ask("hi")).await.0.unwrap().text, "fast");
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());

    c.endpoints.truncate(1);
    let err = call(&OpenAiProvider::new(c).unwrap(), &ask("hi")).await.0.unwrap_err();
    assert_eq!(err, ModelError::Timeout);
}

#[tokio::test]
async fn a_stream_that_stalls_after_text_times_out_without_retry() {
    let stall = vec![text("partial ")];
    let a =
        Mock::start(move |_, _| Reply::Sse { events: stall.clone(), gap: Duration::ZERO, hang: true }).await;
    let b = Mock::start(|_, _| stream_of(&["other"])).await;
    let mut c = config(&[&a.base, &b.base]);
    c.http.timeout = Duration::from_millis(300);
    let (result, deltas) = call(&OpenAiProvider::new(c).unwrap(), &ask("hi")).await;
    assert_eq!(result.unwrap_err(), ModelError::Timeout);
    assert_eq!(deltas, ["partial "]);
    assert_eq!((a.hits(), b.hits()), (1, 0), "the caller saw text: no second attempt");
}

#[tokio::test]
async fn cancel_mid_stream_returns_promptly_and_drops_the_connection() {
    let events = vec![text("thinking... ")];
    let mock =
        Mock::start(move |_, _| Reply::Sse { events: events.clone(), gap: Duration::ZERO, hang: true }).await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(16);
    let token = cancel.clone();
    let task = tokio::spawn(async move { p.complete(&ask("hi"), &tx, &token).await });
    let first = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap();
    assert_eq!(first.as_deref(), Some("thinking... "));
    let start = Instant::now();
    cancel.cancel();
    let result =
        tokio::time::timeout(Duration::from_secs(1), task).await.expect("returned within 1 s").unwrap();
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(mock.stream_dropped(Duration::from_secs(5)).await, "the server saw the connection go");
    assert_eq!(mock.hits(), 1);
}

#[tokio::test]
async fn cancel_during_a_backoff_wait_returns_promptly() {
    let mock = Mock::start(|_, _| error(429, "wait", vec![("retry-after", "30".into())])).await;
    let mut c = config(&[&mock.base]);
    c.http.max_backoff = Duration::from_secs(60);
    let p = OpenAiProvider::new(c).unwrap();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let task = tokio::spawn(async move {
        let (tx, _rx) = mpsc::channel(16);
        p.complete(&ask("hi"), &tx, &token).await
    });
    // The first request arrived: what is left is its 429 and the 30 s wait.
    let deadline = Instant::now() + Duration::from_secs(5);
    while mock.hits() < 1 {
        assert!(Instant::now() < deadline, "the server never got the first request");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let result =
        tokio::time::timeout(Duration::from_secs(1), task).await.expect("returned within 1 s").unwrap();
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);
    assert_eq!(mock.hits(), 1);
}

#[tokio::test]
async fn answers_it_cannot_understand_are_protocol_errors() {
    let cases: Vec<(&str, Reply)> = vec![
        ("garbage event", Reply::SseRaw(vec!["data: {not json\n\n".into()])),
        ("wrong type", Reply::SseRaw(vec!["data: {\"choices\":[{\"delta\":{\"content\":[1]}}]}\n\n".into()])),
        (
            "tool call without name",
            Reply::SseRaw(vec![
                format!("data: {}\n\n", tool(0, Some("x"), None, "{}")),
                "data: [DONE]\n\n".into(),
            ]),
        ),
        (
            "json garbage",
            Reply::Raw { status: 200, content_type: "application/json", body: "{\"choices\": 5}".into() },
        ),
        (
            "truncated json",
            Reply::Raw { status: 200, content_type: "application/json", body: "{\"choices\": [".into() },
        ),
        (
            "html",
            Reply::Raw { status: 200, content_type: "application/json", body: "<html>hi</html>".into() },
        ),
        ("no choices", Reply::Raw { status: 200, content_type: "application/json", body: "{}".into() }),
    ];
    for (what, reply) in cases {
        let reply = std::sync::Mutex::new(Some(reply));
        let mock =
            Mock::start(move |_, _| reply.lock().unwrap().take().unwrap_or_else(|| stream_of(&["retried"])))
                .await;
        let err = call(&OpenAiProvider::new(config(&[&mock.base])).unwrap(), &ask("hi")).await.0;
        assert!(matches!(err, Err(ModelError::Protocol(_))), "{what}: {err:?}");
        assert_eq!(mock.hits(), 1, "{what}: a bad answer is not retried");
    }
}

#[tokio::test]
async fn a_stream_cut_before_done_is_retried_when_nothing_was_shown() {
    let mock = Mock::start(|n, _| match n {
        0 => Reply::SseRaw(vec![format!("data: {}\n\n", tool(0, Some("c"), Some("f"), "{\"a\""))]),
        _ => stream_of(&["second try"]),
    })
    .await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    assert_eq!(call(&p, &ask("hi")).await.0.unwrap().text, "second try");
    assert_eq!(mock.hits(), 2);

    let cut = Mock::start(|_, _| Reply::SseRaw(vec![format!("data: {}\n\n", text("half"))])).await;
    let (result, deltas) = call(&OpenAiProvider::new(config(&[&cut.base])).unwrap(), &ask("hi")).await;
    assert!(matches!(result, Err(ModelError::Protocol(m)) if m.contains("[DONE]")));
    assert_eq!((deltas.len(), cut.hits()), (1, 1));
}

#[tokio::test]
async fn an_error_inside_the_stream_is_reported() {
    let mock = Mock::start(|_, _| {
        Reply::SseRaw(vec!["data: {\"error\": {\"message\": \"CUDA out of memory\"}}\n\n".into()])
    })
    .await;
    let mut c = config(&[&mock.base]);
    c.http.max_retries = 0;
    let err = call(&OpenAiProvider::new(c).unwrap(), &ask("hi")).await.0.unwrap_err();
    assert!(matches!(&err, ModelError::Unavailable(m) if m.contains("CUDA out of memory")), "{err}");
}

#[tokio::test]
async fn a_plain_text_error_body_is_the_message() {
    let mock = Mock::start(|_, _| Reply::Raw {
        status: 404,
        content_type: "text/plain",
        body: "no such route\n".into(),
    })
    .await;
    let err = call(&OpenAiProvider::new(config(&[&mock.base])).unwrap(), &ask("hi")).await.0.unwrap_err();
    assert_eq!(err, ModelError::Http { status: 404, message: "no such route".into() });
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    assert_eq!(p.name(), "openai");
}
