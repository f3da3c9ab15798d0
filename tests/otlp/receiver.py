"""An OTLP/HTTP trace receiver for agentd's trace tests: it decodes each
POST /v1/traces body as an ExportTraceServiceRequest with the official
OpenTelemetry protobuf definitions (`opentelemetry-proto` on PyPI) and
prints every span as one JSON line on stdout:

    SPAN {"service": …, "trace_id": hex, "span_id": hex, "parent_span_id": hex,
          "name": …, "kind": "SPAN_KIND_SERVER", "status": code,
          "start": ns, "end": ns, "attributes": {…}}

    receiver.py [--port N]      listen on 127.0.0.1:N (0: a free port);
                                prints "PORT <n>" once listening
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "bytes_value":
        return v.bytes_value.hex()
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        lines = []
        for rs in req.resource_spans:
            service = attributes(rs.resource.attributes).get("service.name")
            for ss in rs.scope_spans:
                for span in ss.spans:
                    lines.append(json.dumps({
                        "service": service,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": Span.SpanKind.Name(span.kind),
                        "status": span.status.code,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                    }))
        for line in lines:
            sys.stdout.write("SPAN " + line + "\n")
        sys.stdout.flush()
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"PORT {httpd.server_address[1]}", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
