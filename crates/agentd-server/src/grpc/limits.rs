//! What a gRPC request may cost, as the HTTP bindings bound JSON bodies:
//! the `google.protobuf.Value`s of a SendMessage (its data parts and
//! metadata) counted in depth and number against the same limits before
//! they are converted (a value costs a few bytes on the wire and tens of
//! bytes converted), and a share of the body budget taken from the
//! message's length as its frame header declares it, before the message is
//! read and decoded.

use super::pb;
use crate::admission::charge;
use crate::answers::Budgeted;
use crate::auth::{Authenticated, PeerAddr, PeerIdentity};
use crate::params::{authenticate, budget_holder};
use crate::state::AppState;
use agentd_proto::JsonLimits;
use agentd_proto::bounded::{BoundedError, Exceeded};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use prost_types::value::Kind;

/// Decoded, a message costs up to this many times its wire length: a
/// `google.protobuf.Value` of a null or a bool takes 4 bytes on the wire
/// and some 32 decoded.
const DECODED_BYTES_PER_WIRE_BYTE: usize = 8;

/// Refuses a SendMessage with more values, or deeper ones, than `limits`,
/// counted as its JSON form is: every part, every string of a repeated
/// field (and the array holding them), every member of a Struct or Value.
pub fn check_send(req: &pb::SendMessageRequest, limits: JsonLimits) -> Result<(), agentd_proto::A2aError> {
    let mut count = Count { limits, left: limits.max_values };
    count.one(1)?;
    if let Some(s) = &req.metadata {
        count.object(s, 2)?;
    }
    if let Some(c) = &req.configuration {
        count.one(2)?;
        count.strings(c.accepted_output_modes.len(), 3)?;
    }
    if let Some(m) = &req.message {
        count.one(2)?;
        if let Some(s) = &m.metadata {
            count.object(s, 3)?;
        }
        count.strings(m.extensions.len(), 3)?;
        count.strings(m.reference_task_ids.len(), 3)?;
        // The array, then each part: an object and its content.
        count.one(3)?;
        for part in &m.parts {
            count.one(4)?;
            match &part.content {
                Some(pb::part::Content::Data(v)) => count.value(v, 5)?,
                _ => count.one(5)?,
            }
            if let Some(s) = &part.metadata {
                count.object(s, 5)?;
            }
        }
    }
    Ok(())
}

/// Refuses a CancelTask whose metadata has more values, or deeper ones,
/// than `limits`, as [`check_send`] does.
pub fn check_cancel(req: &pb::CancelTaskRequest, limits: JsonLimits) -> Result<(), agentd_proto::A2aError> {
    let mut count = Count { limits, left: limits.max_values };
    count.one(1)?;
    match &req.metadata {
        Some(s) => count.object(s, 2),
        None => Ok(()),
    }
}

struct Count {
    limits: JsonLimits,
    left: usize,
}

impl Count {
    fn one(&mut self, depth: usize) -> Result<(), agentd_proto::A2aError> {
        if depth > self.limits.max_depth {
            return Err(BoundedError::Limit(Exceeded::Depth(self.limits.max_depth)).to_a2a());
        }
        self.left = self
            .left
            .checked_sub(1)
            .ok_or_else(|| BoundedError::Limit(Exceeded::Values(self.limits.max_values)).to_a2a())?;
        Ok(())
    }

    /// A repeated string field of `n` strings: the array and each string.
    fn strings(&mut self, n: usize, depth: usize) -> Result<(), agentd_proto::A2aError> {
        if n == 0 {
            return Ok(());
        }
        (0..=n).try_for_each(|i| self.one(if i == 0 { depth } else { depth + 1 }))
    }

    fn object(&mut self, s: &prost_types::Struct, depth: usize) -> Result<(), agentd_proto::A2aError> {
        self.one(depth)?;
        s.fields.values().try_for_each(|v| self.value(v, depth + 1))
    }

    fn value(&mut self, v: &prost_types::Value, depth: usize) -> Result<(), agentd_proto::A2aError> {
        match &v.kind {
            Some(Kind::StructValue(s)) => self.object(s, depth),
            Some(Kind::ListValue(l)) => {
                self.one(depth)?;
                l.values.iter().try_for_each(|v| self.value(v, depth + 1))
            }
            _ => self.one(depth),
        }
    }
}

/// Middleware of the gRPC router: authenticates the call (UNAUTHENTICATED
/// before anything of the body is read, as the HTTP bindings answer 401),
/// reads the first message's frame header (compressed flag and length),
/// waits for that message's share of the body budget, counted against the
/// caller (`params::budget_holder`), then lets the call read it. The share
/// is held until the answer is made. A2A has no client-streaming calls, so
/// the first message is the request.
pub async fn admit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let principal = match authenticate(&state, &parts.headers, parts.extensions.get::<PeerIdentity>()).await {
        Ok(p) => p,
        Err(f) => return super::service::unauthenticated(&state.auth, &f).into_http(),
    };
    let holder = budget_holder(&state, &principal, parts.extensions.get::<PeerAddr>());
    parts.extensions.insert(Authenticated(principal));
    let mut stream = body.into_data_stream();
    let mut head = Vec::with_capacity(5);
    let mut rest = Vec::new();
    while head.len() < 5 {
        match stream.next().await {
            Some(Ok(chunk)) => {
                let take = (5 - head.len()).min(chunk.len());
                head.extend_from_slice(&chunk[..take]);
                if take < chunk.len() {
                    rest.push(Ok(chunk.slice(take..)));
                }
            }
            // The call sees the error (or the short body) and answers it.
            Some(Err(e)) => {
                rest.push(Err(e));
                break;
            }
            None => break,
        }
    }
    let declared = match head.get(1..5) {
        Some(len) => u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize,
        None => 0,
    };
    // Over the limit, the call refuses it when it decodes the frame; it
    // must not wait for a share it could never get.
    let bytes = declared.min(state.config.max_body_bytes);
    let share = state
        .admission
        .body(
            &holder,
            charge(bytes, state.config.json.max_values)
                .max(bytes.saturating_mul(DECODED_BYTES_PER_WIRE_BYTE)),
        )
        .await;
    // One request message and nothing after it: tonic would decode a
    // second and drop it, and the call would go on as if it were not there.
    let mut left = if head.len() == 5 { declared.saturating_add(5) } else { usize::MAX };
    let replay = futures::stream::iter(std::iter::once(Ok(axum::body::Bytes::from(head))).chain(rest));
    let body = Body::from_stream(replay.chain(stream).map(move |r| {
        let chunk = r.map_err(body_error)?;
        left = left.checked_sub(chunk.len()).ok_or_else(more_than_one_message)?;
        Ok::<_, axum::BoxError>(chunk)
    }));
    let unary = !STREAMING_PATHS.contains(&parts.uri.path());
    let response = next.run(Request::from_parts(parts, body)).await;
    drop(share);
    // Each big message takes a share of the answer budget until written;
    // one that finds none ends the call UNAVAILABLE, naming the limit.
    let (head, body) = response.into_parts();
    let mut body = Budgeted::new(body, state.admission.clone(), holder, Box::new(refused_trailers));
    if !unary {
        return Response::from_parts(head, Body::new(body));
    }
    // tonic encodes a unary answer when its body is first polled, which
    // hyper does only once the client's flow control lets data out (with
    // a window of 0, never): until then the decoded answer would be held
    // without a share. Polled here, it is encoded and takes its share now.
    let first = body.frame().await;
    let frames = futures::stream::iter(first).chain(http_body_util::BodyStream::new(body));
    Response::from_parts(head, Body::new(http_body_util::StreamBody::new(frames)))
}

/// The calls whose answers are streams: their messages are made as they
/// are polled, so they take their shares then.
const STREAMING_PATHS: [&str; 2] =
    ["/lf.a2a.v1.A2AService/SendStreamingMessage", "/lf.a2a.v1.A2AService/SubscribeToTask"];

/// The trailers that end a call whose next message found no share of the
/// answer budget.
fn refused_trailers(e: &agentd_proto::A2aError) -> hyper::body::Frame<axum::body::Bytes> {
    // tonic writes a status only as a whole response: its grpc-* headers
    // are the trailers.
    let (head, _) = super::to_status(e).into_http::<Body>().into_parts();
    let mut trailers = http::HeaderMap::new();
    for (name, value) in &head.headers {
        if name.as_str().starts_with("grpc-") {
            trailers.append(name.clone(), value.clone());
        }
    }
    hyper::body::Frame::trailers(trailers)
}

/// What a body carrying more than its one request message is refused with.
fn more_than_one_message() -> axum::BoxError {
    let e = agentd_proto::A2aError::new(
        agentd_proto::ErrorKind::InvalidRequest,
        "a call carries one request message (A2A has no client-streaming calls); this one carries more",
    );
    Box::new(super::status::to_status(&e))
}

/// A body error as the call reports it. tonic answers an error it cannot
/// place with UNKNOWN; the body read timeout is a status of its own, the
/// one the HTTP bindings' 408 maps to: DEADLINE_EXCEEDED (the server's
/// deadline for receiving the request passed; CANCELLED would say the
/// client gave up), with the same message and ErrorInfo (`REQUEST_TIMEOUT`,
/// the setting). tonic looks for a status along an error's sources.
fn body_error(e: axum::Error) -> axum::BoxError {
    match crate::routes::cause::<crate::listen::BodyTimedOut>(&e) {
        Some(t) => Box::new(super::status::to_status(&t.to_a2a())),
        None => Box::new(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::{ListValue, Struct, Value};

    fn list(values: Vec<Value>) -> Value {
        Value { kind: Some(Kind::ListValue(ListValue { values })) }
    }

    fn null() -> Value {
        Value { kind: Some(Kind::NullValue(0)) }
    }

    fn send(data: Value, metadata: Option<Struct>) -> pb::SendMessageRequest {
        let part = pb::Part { content: Some(pb::part::Content::Data(data)), ..Default::default() };
        pb::SendMessageRequest {
            message: Some(pb::Message { parts: vec![part], ..Default::default() }),
            metadata,
            ..Default::default()
        }
    }

    #[test]
    fn values_are_counted_across_data_and_metadata_and_nesting_is_bounded() {
        // The request, its message, the parts array and the part: 4, and
        // the data part's value at depth 5.
        let limits = JsonLimits { max_depth: 8, max_values: 14 };
        assert!(check_send(&send(list(vec![null(); 9]), None), limits).is_ok(), "4 + 1 list + 9 values");
        let e = check_send(&send(list(vec![null(); 10]), None), limits).expect_err("15 values");
        assert!(e.message.contains("server.max_json_values"), "{}", e.message);
        let meta = Struct { fields: [("k".to_owned(), null())].into_iter().collect() };
        assert!(check_send(&send(list(vec![null(); 8]), Some(meta)), limits).is_err(), "metadata counts too");
        let deep = list(vec![list(vec![list(vec![list(vec![null()])])])]);
        let e = check_send(&send(deep, None), limits).expect_err("9 levels");
        assert!(e.message.contains("server.max_json_depth"), "{}", e.message);
    }

    #[test]
    fn parts_repeated_strings_and_cancel_metadata_count_too() {
        let limits = JsonLimits { max_depth: 8, max_values: 100 };
        let text = pb::Part { content: Some(pb::part::Content::Text(String::new())), ..Default::default() };
        let with = |parts: usize, ids: usize| pb::SendMessageRequest {
            message: Some(pb::Message {
                parts: vec![text.clone(); parts],
                reference_task_ids: vec![String::new(); ids],
                ..Default::default()
            }),
            ..Default::default()
        };
        // The request, the message, the parts array: 3; two values a part.
        assert!(check_send(&with(48, 0), limits).is_ok());
        let e = check_send(&with(49, 0), limits).expect_err("empty parts count");
        assert!(e.message.contains("server.max_json_values"), "{}", e.message);
        assert!(check_send(&with(1, 94), limits).is_ok(), "3 + 2 + the array + 94 ids");
        assert!(check_send(&with(1, 95), limits).is_err(), "repeated strings count");
        let meta = |n: usize| Struct { fields: (0..n).map(|i| (i.to_string(), null())).collect() };
        let cancel = |n| pb::CancelTaskRequest { metadata: Some(meta(n)), ..Default::default() };
        assert!(check_cancel(&cancel(98), limits).is_ok());
        let e = check_cancel(&cancel(99), limits).expect_err("cancel metadata counts");
        assert!(e.message.contains("server.max_json_values"), "{}", e.message);
    }
}
