//! Traces over OTLP (`docs/observability.md`, "Traces"): when
//! `telemetry.otlp.endpoint` is set, the binary installs a
//! `tracing-opentelemetry` layer whose spans a batch processor on tokio
//! posts as OTLP/HTTP protobuf to `<endpoint>/v1/traces`, and the W3C
//! trace-context propagator every incoming and outgoing request uses.
//! Unset, nothing of this is installed: no layer, no cost.
//!
//! Set up in the binary, not in `Daemon::build`: the tracer provider and the
//! propagator are process-wide, and in-process test daemons share a process.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SamplingDecision, SamplingResult, SdkTracerProvider, ShouldSample};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{DynFilterFn, FilterExt as _};
use tracing_subscriber::registry::LookupSpan;

/// The spans that are exported, by their `tracing` name; every other span
/// (an engine operation's, say) only names log lines. A `store.commit`
/// only inside one of these: a worker's bookkeeping commit starts no trace.
const EXPORTED: &[&str] = &["request", "invoke_agent", "chat", "execute_tool", "outbox.deliver"];
const CHILD_ONLY: &[&str] = &["store.commit"];

/// The installed exporter; [`Tracing::shutdown`] sends what is still queued.
pub struct Tracing {
    provider: SdkTracerProvider,
}

impl Tracing {
    /// The exporter to `traces_url` (OTLP/HTTP protobuf), over the
    /// workspace's reqwest client.
    pub fn start(traces_url: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the OTLP HTTP client: {e}"))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(traces_url)
            .with_http_client(http)
            .build()
            .map_err(|e| anyhow::anyhow!("telemetry.otlp.endpoint: cannot set up the OTLP exporter: {e}"))?;
        // The batch processor's delays and sizes follow the OTEL_BSP_* variables.
        let processor =
            opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
                exporter,
                opentelemetry_sdk::runtime::Tokio,
            )
            .build();
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("agentd");
        }
        let resource = resource
            .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        // The sampler OTEL_TRACES_SAMPLER chooses (parent-based by default).
        let sampler = SkipProbes(opentelemetry_sdk::trace::Config::default().sampler);
        let provider = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_span_processor(processor)
            .with_resource(resource.build())
            .build();
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        opentelemetry::global::set_tracer_provider(provider.clone());
        agentd_client::trace::enable();
        Ok(Self { provider })
    }

    /// The layer turning the exported spans into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let tracer = self.provider.tracer("agentd");
        let exported = DynFilterFn::new(|meta, _| meta.is_span() && EXPORTED.contains(&meta.name()));
        let child = DynFilterFn::new(|meta, cx| {
            meta.is_span() && CHILD_ONLY.contains(&meta.name()) && cx.lookup_current().is_some()
        });
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            // The attributes are the conventions' and ours, not the source's.
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            // A span's parent is its nearest exported ancestor in `tracing`'s
            // tree: a turn runs in a task that entered the engine's span (not
            // exported) of the request, never the request's span itself.
            .with_context_activation(false)
            .with_filter(exported.or(child))
    }

    /// Exports the spans still queued (at shutdown), off the async threads:
    /// the processor's shutdown blocks until its task has flushed.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = done {
            tracing::warn!(error = %e, "could not export the last spans");
        }
    }
}

/// The requests of health probes (a load balancer's, Kubernetes') every few
/// seconds start no trace of their own.
const PROBES: &[&str] = &["GET /healthz", "GET /readyz"];

#[derive(Clone, Debug)]
struct SkipProbes(Box<dyn ShouldSample>);

impl ShouldSample for SkipProbes {
    fn should_sample(
        &self,
        parent: Option<&opentelemetry::Context>,
        trace_id: opentelemetry::trace::TraceId,
        name: &str,
        kind: &opentelemetry::trace::SpanKind,
        attributes: &[opentelemetry::KeyValue],
        links: &[opentelemetry::trace::Link],
    ) -> SamplingResult {
        if PROBES.contains(&name) {
            use opentelemetry::trace::TraceContextExt;
            let trace_state =
                parent.map(|cx| cx.span().span_context().trace_state().clone()).unwrap_or_default();
            return SamplingResult { decision: SamplingDecision::Drop, attributes: Vec::new(), trace_state };
        }
        self.0.should_sample(parent, trace_id, name, kind, attributes, links)
    }
}
