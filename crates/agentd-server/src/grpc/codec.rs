//! The binding's protobuf codec: tonic's prost encoder, and a decoder that
//! answers a message that is not valid protobuf (bad varint, a string
//! that is not UTF-8, nesting past prost's recursion limit) as the table's
//! ParseError, `INVALID_ARGUMENT` with a short message, where tonic's own
//! prost codec says `INTERNAL` (the server's fault) with the whole field
//! trail, several KB for a deep `google.protobuf.Value`. The generated
//! client uses it too (only tests do).

use agentd_proto::{A2aError, ErrorKind};
use prost::Message;
use std::marker::PhantomData;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::ProstEncoder;

/// What the generated service (and client) encode and decode with.
pub struct ProtoCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for ProtoCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for ProtoCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(PhantomData)
    }
}

/// Decodes one message; a failure is INVALID_ARGUMENT ([`undecodable`]).
pub struct RequestDecoder<U>(PhantomData<U>);

impl<U: Message + Default> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(|e| super::to_status(&undecodable(&e.to_string())))
    }
}

/// The most of prost's field trail a message names.
const TRAIL: usize = 3;

/// prost's "failed to decode Protobuf message: A.b: C.d: …: why" as
/// "… is not a valid protobuf message: why (at A.b, C.d, …, N fields deep)".
fn undecodable(prost: &str) -> A2aError {
    let mut rest = prost.strip_prefix("failed to decode Protobuf message: ").unwrap_or(prost);
    let mut trail = Vec::new();
    while let Some((step, tail)) = rest.split_once(": ")
        && is_field(step)
    {
        trail.push(step);
        rest = tail;
    }
    let why: String = rest.chars().take(200).collect();
    let mut message = format!("the request is not a valid protobuf message: {why}");
    if !trail.is_empty() {
        let shown = trail[..trail.len().min(TRAIL)].join(", ");
        let more =
            if trail.len() > TRAIL { format!(", … ({} fields deep)", trail.len()) } else { String::new() };
        message.push_str(&format!(" (at {shown}{more})"));
    }
    A2aError::new(ErrorKind::ParseError, message)
}

/// A step of prost's trail: `Message.field`.
fn is_field(step: &str) -> bool {
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    step.split_once('.').is_some_and(|(m, f)| ident(m) && ident(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deep_trail_is_cut_to_its_first_steps_and_its_depth() {
        let deep = format!(
            "failed to decode Protobuf message: {}Part.data: recursion limit reached",
            "ListValue.values: Value.kind: ".repeat(40)
        );
        let e = undecodable(&deep);
        assert_eq!(
            e.message,
            "the request is not a valid protobuf message: recursion limit reached \
             (at ListValue.values, Value.kind, ListValue.values, … (81 fields deep))"
        );
        let e = undecodable("failed to decode Protobuf message: invalid varint");
        assert_eq!(e.message, "the request is not a valid protobuf message: invalid varint");
        assert_eq!(e.kind, ErrorKind::ParseError);
    }
}
