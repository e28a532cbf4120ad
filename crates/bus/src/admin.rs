use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;

use crate::{BusConfig, BusError};

/// Creates every event topic and its dead-letter topic, unless it exists.
/// Events are never expired: `DocumentUploaded` and `DocumentParsed` are the
/// replay sources, and rebuilding the read models replays every topic.
pub async fn ensure_topics(cfg: &BusConfig) -> Result<Vec<String>, BusError> {
    let admin: AdminClient<DefaultClientContext> = cfg.client().create()?;
    let names = cfg.topics.all();
    let new_topics: Vec<NewTopic> = names
        .iter()
        .map(|t| {
            NewTopic::new(t, cfg.partitions, TopicReplication::Fixed(1))
                .set("retention.ms", "-1")
                .set("retention.bytes", "-1")
        })
        .collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let results = admin.create_topics(new_topics.iter(), &opts).await?;
    let mut created = Vec::new();
    for r in results {
        match r {
            Ok(t) => created.push(t),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, code)) => return Err(BusError::Topic { topic, reason: code.to_string() }),
        }
    }
    Ok(created)
}

/// Partition count of each existing topic of ours.
pub fn describe_topics(cfg: &BusConfig) -> Result<Vec<(String, usize)>, BusError> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = cfg.client().create()?;
    let metadata = consumer.fetch_metadata(None, Duration::from_secs(10))?;
    let ours = cfg.topics.all();
    let mut out: Vec<(String, usize)> = metadata
        .topics()
        .iter()
        .filter(|t| ours.iter().any(|o| o == t.name()))
        .map(|t| (t.name().to_string(), t.partitions().len()))
        .collect();
    out.sort();
    Ok(out)
}
