//! Model calls, named after the OpenTelemetry GenAI semantic conventions:
//! `gen_ai.client.operation.duration`, `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.time_to_first_chunk`, with their attributes as
//! labels (`gen_ai.operation.name`, `gen_ai.provider.name`,
//! `gen_ai.token.type`, `error.type`) and the conventions' bucket bounds.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The operation of every model call the agent loop makes.
const CHAT: &str = "chat";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Call {
    gen_ai_operation_name: &'static str,
    gen_ai_provider_name: String,
    /// Empty (no label) on success.
    error_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Provider {
    gen_ai_operation_name: &'static str,
    gen_ai_provider_name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Tokens {
    gen_ai_operation_name: &'static str,
    gen_ai_provider_name: String,
    gen_ai_token_type: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new([0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92])
}

fn token_histogram() -> Histogram {
    Histogram::new([
        1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
        16777216.0, 67108864.0,
    ])
}

pub struct ModelMetrics {
    duration: Histograms<Call>,
    first_chunk: Histograms<Provider>,
    tokens: Histograms<Tokens>,
}

impl ModelMetrics {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self {
            duration: Family::new_with_constructor(duration_histogram),
            first_chunk: Family::new_with_constructor(duration_histogram),
            tokens: Family::new_with_constructor(token_histogram),
        };
        registry.register(
            "gen_ai_client_operation_duration_seconds",
            "Model calls from request to the whole response, by provider (error_type set when it failed)",
            s.duration.clone(),
        );
        registry.register(
            "gen_ai_client_operation_time_to_first_chunk_seconds",
            "Model calls from request to the first streamed text, by provider",
            s.first_chunk.clone(),
        );
        registry.register(
            "gen_ai_client_token_usage",
            "Tokens per model call as the provider reported them, by provider and token type (input, output)",
            s.tokens.clone(),
        );
        s
    }

    /// One model call: its duration, `Err(error_type)` when it failed.
    pub fn call(&self, provider: &str, result: Result<(), &'static str>, secs: f64) {
        let error_type = result.err().unwrap_or("");
        let labels =
            Call { gen_ai_operation_name: CHAT, gen_ai_provider_name: provider.to_owned(), error_type };
        self.duration.get_or_create(&labels).observe(secs);
    }

    pub fn first_chunk(&self, provider: &str, secs: f64) {
        let labels = Provider { gen_ai_operation_name: CHAT, gen_ai_provider_name: provider.to_owned() };
        self.first_chunk.get_or_create(&labels).observe(secs);
    }

    pub fn tokens(&self, provider: &str, input: u64, output: u64) {
        for (kind, n) in [("input", input), ("output", output)] {
            let labels = Tokens {
                gen_ai_operation_name: CHAT,
                gen_ai_provider_name: provider.to_owned(),
                gen_ai_token_type: kind,
            };
            self.tokens.get_or_create(&labels).observe(n as f64);
        }
    }
}
