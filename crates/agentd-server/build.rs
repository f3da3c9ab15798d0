//! Generates the gRPC binding's message types and service trait from
//! `proto/a2a.proto` at build time. The proto is compiled by `protox`, a
//! protobuf compiler written in Rust, so no system `protoc` is needed; its
//! descriptor set then feeds tonic's code generator. Without the `grpc`
//! feature there is nothing to generate.

use std::io;

#[cfg(not(feature = "grpc"))]
fn main() -> io::Result<()> {
    Ok(())
}

#[cfg(feature = "grpc")]
fn main() -> io::Result<()> {
    let proto_dir = "proto";
    let a2a = "proto/a2a.proto";
    println!("cargo:rerun-if-changed={proto_dir}");
    let mut fds = protox::compile([a2a], [proto_dir]).map_err(|e| io::Error::other(e.to_string()))?;
    // The google.api imports only carry options (HTTP rules, field
    // behaviour) the generated code does not use: no Rust for them. The
    // well-known types stay in the set (the generator resolves them) and map
    // to `prost_types`.
    fds.file.retain(|f| f.package() != "google.api");
    tonic_prost_build::configure()
        .build_server(true)
        // The client is generic over its transport; only tests instantiate it.
        .build_client(true)
        .build_transport(false)
        .emit_rerun_if_changed(false)
        // Undecodable protobuf is the client's fault: INVALID_ARGUMENT
        // (`src/grpc/codec.rs`), not the INTERNAL of tonic's prost codec.
        .codec_path("crate::grpc::codec::ProtoCodec")
        .compile_fds(fds)
}
