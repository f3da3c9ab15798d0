//! Model calls, named after the OpenTelemetry GenAI semantic conventions:
//! `gen_ai.client.operation.duration`, `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.time_to_first_chunk`, with their attributes as
//! labels (`gen_ai.operation.name`, `gen_ai.provider.name`,
//! `gen_ai.token.type`, `error.type`) and the conventions' bucket bounds.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

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
    /// The series of each provider a call was made with, resolved once.
    providers: RwLock<HashMap<String, Arc<ProviderCalls>>>,
}

/// The series of one provider's calls, to keep for the length of a call:
/// recording a successful call then looks nothing up and allocates nothing.
pub struct ProviderCalls {
    provider: String,
    ok: Histogram,
    first_chunk: Histogram,
    input_tokens: Histogram,
    output_tokens: Histogram,
    duration: Histograms<Call>,
}

impl ProviderCalls {
    /// A call answered after `secs`, with its tokens.
    pub fn ok(&self, secs: f64, input_tokens: u64, output_tokens: u64) {
        self.ok.observe(secs);
        self.input_tokens.observe(input_tokens as f64);
        self.output_tokens.observe(output_tokens as f64);
    }

    /// A call failed after `secs`; `error_type` names how (a closed set).
    pub fn failed(&self, error_type: &'static str, secs: f64) {
        let labels =
            Call { gen_ai_operation_name: CHAT, gen_ai_provider_name: self.provider.clone(), error_type };
        self.duration.get_or_create(&labels).observe(secs);
    }

    /// The first text of a call came after `secs`.
    pub fn first_chunk(&self, secs: f64) {
        self.first_chunk.observe(secs);
    }
}

impl ModelMetrics {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self {
            duration: Family::new_with_constructor(duration_histogram),
            first_chunk: Family::new_with_constructor(duration_histogram),
            tokens: Family::new_with_constructor(token_histogram),
            providers: RwLock::default(),
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

    /// The series of `provider` (`echo`, `openai`, ...), made on its first call.
    pub fn provider(&self, provider: &str) -> Arc<ProviderCalls> {
        if let Some(p) = self.providers.read().unwrap_or_else(|e| e.into_inner()).get(provider) {
            return p.clone();
        }
        let mut all = self.providers.write().unwrap_or_else(|e| e.into_inner());
        all.entry(provider.to_owned()).or_insert_with(|| Arc::new(self.resolve(provider))).clone()
    }

    fn resolve(&self, provider: &str) -> ProviderCalls {
        let name = || provider.to_owned();
        let tokens = |kind| Tokens {
            gen_ai_operation_name: CHAT,
            gen_ai_provider_name: name(),
            gen_ai_token_type: kind,
        };
        ProviderCalls {
            provider: name(),
            ok: self.duration.get_or_create_owned(&Call {
                gen_ai_operation_name: CHAT,
                gen_ai_provider_name: name(),
                error_type: "",
            }),
            first_chunk: self
                .first_chunk
                .get_or_create_owned(&Provider { gen_ai_operation_name: CHAT, gen_ai_provider_name: name() }),
            input_tokens: self.tokens.get_or_create_owned(&tokens("input")),
            output_tokens: self.tokens.get_or_create_owned(&tokens("output")),
            duration: self.duration.clone(),
        }
    }
}
