//! librdkafka's own log lines (session timeouts, max-poll exits, request
//! timeouts, broker disconnects) as `tracing` events. rdkafka logs through
//! the `log` crate by default, which nothing here forwards: without this
//! those warnings are invisible.

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::ClientContext;

/// Forwards one librdkafka log line under the target `librdkafka`.
pub fn forward(client: &str, level: RDKafkaLogLevel, facility: &str, message: &str) {
    match level {
        RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical | RDKafkaLogLevel::Error => {
            tracing::error!(target: "librdkafka", client, facility, "{message}")
        }
        RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", client, facility, "{message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => tracing::info!(target: "librdkafka", client, facility, "{message}"),
        RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", client, facility, "{message}"),
    }
}

/// The client context of producers and admin clients: logs through `tracing`.
#[derive(Debug, Clone, Default)]
pub struct TracingContext {
    pub client: String,
}

impl ClientContext for TracingContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        forward(&self.client, level, fac, log_message);
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        tracing::warn!(target: "librdkafka", client = %self.client, error = %error, "{reason}");
    }
}

/// Group-less readers (lag, verification) need nothing else of a consumer context.
impl rdkafka::consumer::ConsumerContext for TracingContext {}
