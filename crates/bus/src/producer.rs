use std::time::Duration;

use rag_events::{Codec, Event};
use rag_telemetry::events::RecordDelivered;
use rag_telemetry::InternalEvent;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::{headers, BusConfig, BusError};

/// W3C trace context derived from the envelope: the whole chain started by
/// one upload or question shares a trace id (its correlation id), and each
/// event is a span (its event id). Deterministic, so a re-produced event
/// carries the same context.
pub fn traceparent(env: &rag_events::Envelope) -> String {
    fn hex_of(id: &str, len: usize) -> String {
        let mut hex: String = id.chars().filter(|c| c.is_ascii_hexdigit()).map(|c| c.to_ascii_lowercase()).collect();
        if hex.len() < len || hex.chars().all(|c| c == '0') {
            // Not a UUID: fall back to a stable digest of the text.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in id.bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            hex = format!("{h:016x}{:016x}", h.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15);
        }
        hex.truncate(len);
        hex
    }
    format!("00-{}-{}-01", hex_of(&env.correlation_id, 32), hex_of(&env.event_id, 16))
}

/// Where a produced record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub partition: i32,
    pub offset: i64,
}

/// Idempotent producer (`enable.idempotence=true`, `acks=all`): a retried
/// send is never written twice by the broker. Every send waits for the
/// broker's delivery report, so `Ok` means the record is durable.
#[derive(Clone)]
pub struct EventProducer {
    producer: FutureProducer<crate::logging::TracingContext>,
    codec: Codec,
    cfg: BusConfig,
    name: String,
}

impl std::fmt::Debug for EventProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventProducer").field("name", &self.name).finish_non_exhaustive()
    }
}

impl EventProducer {
    /// A producer for stages: it keeps trying through a broker restart for
    /// up to five minutes before a send fails.
    pub fn new(cfg: &BusConfig, codec: Codec, name: &str) -> Result<Self, BusError> {
        Self::with_delivery_timeout(cfg, codec, name, Duration::from_secs(300))
    }

    /// A producer whose sends fail after `timeout` without a delivery report:
    /// a request handler answers "unavailable" instead of hanging.
    pub fn with_delivery_timeout(cfg: &BusConfig, codec: Codec, name: &str, timeout: Duration) -> Result<Self, BusError> {
        let mut client = cfg.client();
        client.set("client.id", name).set("enable.idempotence", cfg.idempotence.to_string()).set("acks", "all");
        if !cfg.idempotence {
            client.set("max.in.flight.requests.per.connection", "1");
        }
        let producer: FutureProducer<crate::logging::TracingContext> = client
            // 1 ms, not librdkafka's 5: a stage sends one event per record
            // and waits for its delivery, so the linger is paid on every hop
            // (bench ingest: 141 pages/s with 1 ms, 123 with 5; bursts still batch).
            .set("linger.ms", "1")
            .set("message.timeout.ms", timeout.as_millis().max(1).to_string())
            .create_with_context(crate::logging::TracingContext { client: name.to_string() })?;
        Ok(EventProducer { producer, codec, cfg: cfg.clone(), name: name.to_string() })
    }

    /// Whether the brokers answer a metadata request within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> Result<(), BusError> {
        use rdkafka::producer::Producer;
        let producer = self.producer.clone();
        tokio::task::spawn_blocking(move || producer.client().fetch_metadata(None, timeout).map(|_| ()))
            .await
            .map_err(|e| BusError::StageFailed { stage: "metadata request".into(), reason: e.to_string() })??;
        Ok(())
    }

    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    pub fn config(&self) -> &BusConfig {
        &self.cfg
    }

    /// Encodes and produces a catalog event on its topic, keyed by its entity.
    pub async fn send<E: Event>(&self, event: &E) -> Result<Delivered, BusError> {
        let payload = self.codec.encode(event)?;
        let env = event.envelope();
        let fingerprint = self.codec.fingerprint_hex(E::TYPE);
        let hdrs = vec![
            (headers::EVENT_TYPE.to_string(), E::TYPE.name().as_bytes().to_vec()),
            (headers::SCHEMA_FINGERPRINT.to_string(), fingerprint.into_bytes()),
            (headers::EVENT_ID.to_string(), env.event_id.as_bytes().to_vec()),
            (headers::CORRELATION_ID.to_string(), env.correlation_id.as_bytes().to_vec()),
            (headers::WORKSPACE_ID.to_string(), env.workspace_id.as_bytes().to_vec()),
            (headers::TRACEPARENT.to_string(), traceparent(env).into_bytes()),
            (headers::CONTENT_TYPE.to_string(), b"application/vnd.apache.avro.single-object".to_vec()),
        ];
        let topic = self.cfg.topics.of(E::TYPE);
        self.send_raw(&topic, Some(event.key().as_bytes()), &payload, &hdrs).await
    }

    /// Produces raw bytes (dead letters, redrives, tests of bad input).
    pub async fn send_raw(
        &self,
        topic: &str,
        key: Option<&[u8]>,
        payload: &[u8],
        hdrs: &[(String, Vec<u8>)],
    ) -> Result<Delivered, BusError> {
        let mut owned = OwnedHeaders::new_with_capacity(hdrs.len());
        for (k, v) in hdrs {
            owned = owned.insert(Header { key: k, value: Some(v.as_slice()) });
        }
        let mut record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic).payload(payload).headers(owned);
        if let Some(key) = key {
            record = record.key(key);
        }
        let delivery = self.producer.send(record, Duration::from_secs(0)).await.map_err(|(e, _)| BusError::Kafka(e))?;
        let (partition, offset) = (delivery.partition, delivery.offset);
        RecordDelivered { producer: &self.name, topic }.emit();
        Ok(Delivered { partition, offset })
    }

    /// Waits for every queued record's delivery report.
    pub fn flush(&self, timeout: Duration) -> Result<(), BusError> {
        use rdkafka::producer::Producer;
        self.producer.flush(timeout)?;
        Ok(())
    }
}
