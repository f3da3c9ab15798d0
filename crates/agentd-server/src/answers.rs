//! Answers hold a share of the answer budget until they are written.
//!
//! An answer is built whole before it is handed to hyper (a reply, an SSE
//! frame, a gRPC message), and hyper keeps it until the client has read
//! it. A task may be tens of MiB, so a client that asks for it on many
//! connections (or streams) and never reads would hold that much each:
//! without a bound, a few hundred requests of a hundred bytes hold GiBs.
//! Here an answer bigger than [`UNCOUNTED_BODY_BYTES`] takes a share of the
//! answer budget ([`Admission::answer`]), and its bytes keep the share
//! until the last reference to them is dropped, which hyper does once it
//! has written them. Past the caller's part, or the budget, the answer is
//! refused and its memory let go at once.

use crate::admission::{Admission, AnswerShare, UNCOUNTED_BODY_BYTES};
use agentd_proto::A2aError;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Bytes that keep their share of the budget for as long as they live.
struct Held<T> {
    bytes: T,
    _share: AnswerShare,
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Held<T> {
    fn as_ref(&self) -> &[u8] {
        self.bytes.as_ref()
    }
}

/// `answer` as bytes that hold their share of the budget, or the refusal.
pub fn hold<T>(admission: &Admission, holder: &str, answer: T) -> Result<Bytes, A2aError>
where
    T: AsRef<[u8]> + Into<Bytes> + Send + 'static,
{
    match admission.answer(holder, answer.as_ref().len())? {
        None => Ok(answer.into()),
        Some(share) => Ok(Bytes::from_owner(Held { bytes: answer, _share: share })),
    }
}

/// What a stream says instead of a frame it could not take a share for;
/// the stream ends after it.
pub type Refusal = Box<dyn Fn(&A2aError) -> Frame<Bytes> + Send + Sync>;

/// A streamed body whose big data frames each take a share of the answer
/// budget (an SSE stream's frames, a gRPC call's messages).
pub struct Budgeted<B> {
    inner: B,
    admission: Arc<Admission>,
    holder: String,
    refusal: Refusal,
    ended: bool,
}

impl<B> Budgeted<B> {
    pub fn new(inner: B, admission: Arc<Admission>, holder: String, refusal: Refusal) -> Self {
        Self { inner, admission, holder, refusal, ended: false }
    }
}

impl<B> Body for Budgeted<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let frame = match std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            other => return Poll::Ready(other),
        };
        let frame = match frame.into_data() {
            Ok(data) if data.len() > UNCOUNTED_BODY_BYTES => {
                match hold(&this.admission, &this.holder, data) {
                    Ok(held) => Frame::data(held),
                    Err(e) => {
                        this.ended = true;
                        (this.refusal)(&e)
                    }
                }
            }
            Ok(data) => Frame::data(data),
            Err(frame) => frame,
        };
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    /// Unknown: a refusal may end the body early.
    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ServerConfig;
    use http_body_util::BodyExt;

    fn admission(bytes_in_flight: usize, per_holder: usize) -> Arc<Admission> {
        let cfg = ServerConfig {
            max_body_bytes_in_flight: bytes_in_flight,
            max_body_bytes_in_flight_per_principal: per_holder,
            ..ServerConfig::default()
        };
        Arc::new(Admission::new(&cfg))
    }

    const MIB: usize = 1024 * 1024;

    #[test]
    fn a_big_answer_holds_its_share_until_its_bytes_are_dropped() {
        let a = admission(4 * MIB, 2 * MIB);
        let first = hold(&a, "alice", vec![1u8; 2 * MIB]).expect("alice's first");
        let copy = first.clone();
        let e = hold(&a, "alice", vec![1u8; MIB]).expect_err("alice's part is held");
        assert_eq!(e.kind, agentd_proto::ErrorKind::Unavailable);
        assert!(e.message.contains("server.max_body_bytes_in_flight_per_principal"), "{}", e.message);
        // Another caller has a part of its own; small answers are not counted.
        let bob = hold(&a, "bob", vec![1u8; 2 * MIB]).expect("bob's");
        hold(&a, "alice", vec![1u8; UNCOUNTED_BODY_BYTES]).expect("a small answer");
        drop(first);
        hold(&a, "alice", vec![1u8; MIB]).expect_err("a copy of the bytes still holds the share");
        drop(copy);
        hold(&a, "alice", vec![1u8; MIB]).expect("written and let go: the share is back");
        drop(bob);
    }

    #[test]
    fn past_the_whole_budget_answers_are_refused_naming_it() {
        let a = admission(2 * MIB, 2 * MIB);
        let held = hold(&a, "alice", vec![0u8; 2 * MIB]).expect("the budget's worth");
        let e = hold(&a, "bob", vec![0u8; MIB]).expect_err("none left");
        assert_eq!(e.metadata.get("limit").map(String::as_str), Some("server.max_body_bytes_in_flight"));
        drop(held);
        hold(&a, "bob", vec![0u8; MIB]).expect("given back");
    }

    #[tokio::test]
    async fn a_stream_ends_with_its_refusal_when_a_frame_finds_no_share() {
        let a = admission(4 * MIB, 2 * MIB);
        let held = hold(&a, "alice", vec![0u8; 2 * MIB]).expect("alice's part, unread");
        let frames =
            [Bytes::from_static(b"small"), Bytes::from(vec![7u8; MIB]), Bytes::from_static(b"after")];
        let inner = http_body_util::StreamBody::new(futures::stream::iter(
            frames.map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b))),
        ));
        let refusal: Refusal = Box::new(|e| Frame::data(Bytes::from(format!("refused: {}", e.message))));
        let body = Budgeted::new(inner, a.clone(), "alice".into(), refusal);
        let got = body.collect().await.expect("body").to_bytes();
        assert!(got.starts_with(b"smallrefused: your earlier answers"), "{:?}", &got[..40.min(got.len())]);
        assert!(!got.ends_with(b"after"), "nothing after the refusal");
        drop(held);
    }
}
