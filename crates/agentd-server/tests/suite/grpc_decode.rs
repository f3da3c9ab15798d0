//! A gRPC request that is not valid protobuf (a bad varint, a string that
//! is not UTF-8, a `google.protobuf.Value` nested past prost's recursion
//! limit) is the client's fault: INVALID_ARGUMENT with a short message,
//! never INTERNAL, and nothing is stored.

use crate::support::serve_in_process;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use agentd_server::{ExtensionRegistry, VersionPolicy};
use bytes::{Buf, BufMut};
use http::uri::PathAndQuery;
use prost_types::{ListValue, Value, value::Kind};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::{Code, Status};

const NOT_PROTOBUF: &str = "the request is not a valid protobuf message: ";

/// Sends its bytes as the message, as they are; reads no answer.
#[derive(Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = ();
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = ();
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<()>, Status> {
        src.advance(src.remaining());
        Ok(Some(()))
    }
}

async fn send_raw(ch: &Channel, method: &'static str, body: &[u8]) -> Status {
    let mut grpc = tonic::client::Grpc::new(ch.clone());
    grpc.ready().await.expect("ready");
    let path = PathAndQuery::from_static(method);
    grpc.unary(tonic::Request::new(body.to_vec()), path, Raw).await.expect_err("refused")
}

/// `depth` list values, one in the other.
fn nested(depth: usize) -> Value {
    (0..depth).fold(Value { kind: Some(Kind::NullValue(0)) }, |inner, _| Value {
        kind: Some(Kind::ListValue(ListValue { values: vec![inner] })),
    })
}

#[tokio::test]
async fn undecodable_protobuf_is_invalid_argument_with_a_short_message() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let ch = Channel::from_shared(format!("http://{addr}")).expect("uri").connect().await.expect("connect");
    let send = "/lf.a2a.v1.A2AService/SendMessage";
    let stream = "/lf.a2a.v1.A2AService/SendStreamingMessage";
    // A key whose varint never ends; `tenant` (field 1) as bytes that are not UTF-8.
    let cases: [(&'static str, &[u8], String); 3] = [
        (send, &[0xff; 11], format!("{NOT_PROTOBUF}invalid varint")),
        (stream, &[0xff; 11], format!("{NOT_PROTOBUF}invalid varint")),
        (
            send,
            &[0x0a, 0x02, 0xc3, 0x28],
            format!(
                "{NOT_PROTOBUF}invalid string value: data is not UTF-8 encoded (at SendMessageRequest.tenant)"
            ),
        ),
    ];
    for (method, body, message) in cases {
        let e = send_raw(&ch, method, body).await;
        assert_eq!(e.code(), Code::InvalidArgument, "{method} {body:?}: {e:?}");
        assert_eq!(e.message(), message, "{method} {body:?}");
    }

    let deep = pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: "m1".into(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Data(nested(70))),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut c = A2aServiceClient::new(ch);
    let e = c.send_message(deep).await.expect_err("too deep");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let m = e.message();
    let want = format!(
        "{NOT_PROTOBUF}recursion limit reached (at ListValue.values, Value.kind, ListValue.values, … ("
    );
    assert!(m.starts_with(&want) && m.ends_with(" fields deep))"), "{m}");
    assert!(m.len() < 200, "{} bytes: {m}", m.len());

    let tasks = c.list_tasks(pb::ListTasksRequest::default()).await.expect("list").into_inner();
    assert!(tasks.tasks.is_empty(), "nothing was stored: {tasks:?}");
    stop.cancel();
}

#[tokio::test]
async fn a_call_carrying_two_request_messages_is_refused_and_does_nothing() {
    use prost::Message as _;
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let ch = Channel::from_shared(format!("http://{addr}")).expect("uri").connect().await.expect("connect");
    let message = crate::support::grpc_text_message(pb::Role::User).encode_to_vec();
    for method in ["/lf.a2a.v1.A2AService/SendMessage", "/lf.a2a.v1.A2AService/SendStreamingMessage"] {
        let mut grpc = tonic::client::Grpc::new(ch.clone());
        grpc.ready().await.expect("ready");
        let two = futures::stream::iter([message.clone(), message.clone()]);
        let path = PathAndQuery::from_static(method);
        let e = grpc.client_streaming(tonic::Request::new(two), path, Raw).await.expect_err("refused");
        assert_eq!(e.code(), Code::InvalidArgument, "{method}: {e:?}");
        assert!(e.message().starts_with("a call carries one request message"), "{method}: {}", e.message());
    }
    // One message is served as ever, and is the one task stored.
    let mut c = A2aServiceClient::new(ch);
    c.send_message(crate::support::grpc_text_message(pb::Role::User)).await.expect("one message");
    let tasks = c.list_tasks(pb::ListTasksRequest::default()).await.expect("list").into_inner();
    assert_eq!(tasks.tasks.len(), 1, "the refused calls stored nothing: {tasks:?}");
    stop.cancel();
}
