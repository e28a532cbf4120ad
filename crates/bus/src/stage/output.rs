//! [`StageOutput`]: where a stage's events go.

use rag_events::{Codec, Event};
use rag_telemetry::events::EventProduced;
use rag_telemetry::InternalEvent;

use crate::producer::{Delivered, EventProducer};
use crate::BusError;

/// A stage's producer: every event is produced on its topic, confirmed by
/// the broker (`Ok` means durable) and counted as the stage's output.
#[derive(Clone, Debug)]
pub struct StageOutput {
    producer: EventProducer,
    stage: &'static str,
}

impl StageOutput {
    pub fn new(producer: EventProducer, stage: &'static str) -> Self {
        StageOutput { producer, stage }
    }

    pub async fn send<E: Event>(&self, event: &E) -> Result<Delivered, BusError> {
        let delivered = self.producer.send(event).await?;
        EventProduced { stage: self.stage, topic: &self.producer.config().topics.of(E::TYPE) }.emit();
        Ok(delivered)
    }

    pub fn codec(&self) -> &Codec {
        self.producer.codec()
    }
}
