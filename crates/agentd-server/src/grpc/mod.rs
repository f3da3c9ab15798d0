//! The gRPC binding (`lf.a2a.v1.A2AService`, §10) on the same listener as
//! the HTTP bindings: requests whose `content-type` starts with
//! `application/grpc` go to the tonic service, everything else to the HTTP
//! router. Types are generated at build time from `proto/a2a.proto`;
//! `convert`, `requests` and `card` map them to the data model of
//! `agentd-proto` field by field, `status` maps errors, `codec` refuses
//! undecodable protobuf as INVALID_ARGUMENT, `service` is the adapter
//! around the engine.

mod card;
mod codec;
mod convert;
mod limits;
mod requests;
mod service;
mod status;
#[cfg(test)]
mod tests;
mod wkt;

pub use service::A2aGrpc;
pub use status::to_status;
pub use wkt::FieldError;

/// The generated messages, server trait and client of `lf.a2a.v1`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("lf.a2a.v1");
}

use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::routing::future::RouteFuture;
use http::Request;
use std::convert::Infallible;
use std::task::{Context, Poll};

/// The tonic service as a router of its own (unknown methods answer
/// UNIMPLEMENTED), accepting messages up to the HTTP bindings' body limit.
/// Each call first takes its share of the body budget (`limits.rs`).
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let svc = pb::a2a_service_server::A2aServiceServer::new(A2aGrpc::new(state.clone()))
        .max_decoding_message_size(limit);
    tonic::service::Routes::new(svc)
        .into_axum_router()
        .layer(axum::middleware::from_fn_with_state(state, limits::admit))
}

/// Whether a request speaks gRPC (`application/grpc`, `application/grpc+proto`, …).
pub fn is_grpc<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"))
}

/// Splits one listener between two routers by `content-type`.
#[derive(Clone)]
pub struct ByContentType {
    pub http: Router,
    pub grpc: Router,
}

impl tower::Service<Request<Body>> for ByContentType {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = RouteFuture<Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Routers are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if is_grpc(&req) { self.grpc.call(req) } else { self.http.call(req) }
    }
}
