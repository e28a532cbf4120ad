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
        .map(|t| NewTopic::new(t, cfg.partitions, TopicReplication::Fixed(1)).set("retention.ms", "-1").set("retention.bytes", "-1"))
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

/// Deletes every event topic and dead-letter topic of this deployment's
/// prefix, and the consumer groups named in `groups` (full names). For
/// throw-away deployments (each test's prefix): a broker that keeps every
/// test's topics slows down as they pile up. Topics or groups already gone
/// are not an error.
pub async fn delete_deployment(cfg: &BusConfig, groups: &[String]) -> Result<(), BusError> {
    use rdkafka::admin::GroupResult;
    let admin: AdminClient<DefaultClientContext> = cfg.client().create()?;
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let names = cfg.topics.all();
    let topics: Vec<&str> = names.iter().map(String::as_str).collect();
    for r in admin.delete_topics(&topics, &opts).await? {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
            Err((topic, code)) => return Err(BusError::Topic { topic, reason: code.to_string() }),
        }
    }
    if !groups.is_empty() {
        let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
        let results: Vec<GroupResult> = admin.delete_groups(&groups, &opts).await?;
        for r in results {
            match r {
                Ok(_) | Err((_, RDKafkaErrorCode::GroupIdNotFound)) => {}
                Err((group, code)) => return Err(BusError::Topic { topic: format!("group {group}"), reason: code.to_string() }),
            }
        }
    }
    Ok(())
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

/// Every record of `topic` from the start of each partition to its end as
/// of the call (a snapshot), read without a consumer group, so nothing is
/// committed and no stage is disturbed. Fails if the topic does not exist
/// or the end is not reached within `timeout`.
pub async fn read_topic(cfg: &BusConfig, topic: &str, timeout: Duration) -> Result<Vec<crate::Inbound>, BusError> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Offset, TopicPartitionList};
    let consumer: BaseConsumer = cfg
        .client()
        .set("group.id", format!("rag-engine-reader-{}", uuid::Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string())
        .create()?;
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        let mut ends = std::collections::HashMap::new();
        let mut assignment = TopicPartitionList::new();
        for (p, low, high) in partition_watermarks(&consumer, &topic)? {
            if high > low {
                ends.insert(p, high);
                assignment.add_partition_offset(&topic, p, Offset::Offset(low))?;
            }
        }
        let mut out = Vec::new();
        if ends.is_empty() {
            return Ok(out);
        }
        consumer.assign(&assignment)?;
        let deadline = std::time::Instant::now() + timeout;
        while !ends.is_empty() {
            if std::time::Instant::now() > deadline {
                return Err(BusError::Topic { topic: topic.clone(), reason: format!("not read to its end within {timeout:?}") });
            }
            let Some(msg) = consumer.poll(Duration::from_millis(200)) else { continue };
            let record = crate::Inbound::from_owned(&msg?.detach());
            let (partition, offset) = (record.partition, record.offset);
            out.push(record);
            if ends.get(&partition).is_some_and(|end| offset + 1 >= *end) {
                ends.remove(&partition);
            }
        }
        out.sort_by_key(|r| (r.partition, r.offset));
        Ok(out)
    })
    .await
    .map_err(|e| BusError::Topic { topic: "?".into(), reason: format!("reader task: {e}") })?
}

fn partition_watermarks<X: rdkafka::consumer::ConsumerContext, C: rdkafka::consumer::Consumer<X>>(
    consumer: &C,
    topic: &str,
) -> Result<Vec<(i32, i64, i64)>, BusError> {
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    if partitions.is_empty() {
        return Err(BusError::Topic { topic: topic.to_string(), reason: "the topic does not exist".into() });
    }
    let mut out = Vec::with_capacity(partitions.len());
    for p in partitions {
        let (low, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(10))?;
        out.push((p, low, high));
    }
    Ok(out)
}

/// `(partition, low, high)` watermarks of every partition of `topic`: the
/// first offset still stored and the offset the next record will get.
pub async fn watermarks(cfg: &BusConfig, topic: &str) -> Result<Vec<(i32, i64, i64)>, BusError> {
    use rdkafka::consumer::BaseConsumer;
    let consumer: BaseConsumer = cfg.client().create()?;
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || partition_watermarks(&consumer, &topic))
        .await
        .map_err(|e| BusError::Topic { topic: "?".into(), reason: format!("watermark task: {e}") })?
}

/// Members of a consumer group, as the broker reports them (the member ids).
pub async fn group_members(cfg: &BusConfig, group: &str) -> Result<Vec<String>, BusError> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = cfg.client().create()?;
    let group = group.to_string();
    tokio::task::spawn_blocking(move || {
        let list = consumer.fetch_group_list(Some(&group), Duration::from_secs(10))?;
        Ok(list.groups().iter().filter(|g| g.name() == group).flat_map(|g| g.members().iter().map(|m| m.id().to_string())).collect())
    })
    .await
    .map_err(|e| BusError::Topic { topic: "?".into(), reason: format!("group list task: {e}") })?
}

/// Moves a consumer group's committed Kafka offsets back to the start of
/// every partition of `topics` (the group must have no active members).
/// Stages that own their offsets in Postgres position themselves from the
/// first record they receive; with the committed offsets at the end, a
/// replay from the beginning would receive none.
pub async fn rewind_group(cfg: &BusConfig, group: &str, topics: &[String]) -> Result<(), BusError> {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::{Offset, TopicPartitionList};
    let consumer: BaseConsumer = cfg.client().set("group.id", group).set("enable.auto.commit", "false").create()?;
    let topics = topics.to_vec();
    tokio::task::spawn_blocking(move || {
        let mut tpl = TopicPartitionList::new();
        for topic in &topics {
            for (p, low, _) in partition_watermarks(&consumer, topic)? {
                tpl.add_partition_offset(topic, p, Offset::Offset(low))?;
            }
        }
        if tpl.count() > 0 {
            consumer.commit(&tpl, CommitMode::Sync)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| BusError::Topic { topic: "?".into(), reason: format!("rewind task: {e}") })?
}

/// The offsets `group` (its full name) committed on every partition of
/// `topic`, read without joining the group: `(partition, committed)`, with
/// `None` where it never committed.
pub async fn committed_offsets(cfg: &BusConfig, group: &str, topic: &str) -> Result<Vec<(i32, Option<i64>)>, BusError> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::TopicPartitionList;
    let consumer: BaseConsumer<crate::logging::TracingContext> = cfg
        .client()
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create_with_context(crate::logging::TracingContext { client: "offset-reader".into() })?;
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        let mut tpl = TopicPartitionList::new();
        let partitions = partition_watermarks(&consumer, &topic)?;
        for (p, _, _) in &partitions {
            tpl.add_partition(&topic, *p);
        }
        let committed = consumer.committed_offsets(tpl, Duration::from_secs(10))?;
        Ok(partitions
            .iter()
            .map(|(p, _, _)| (*p, committed.find_partition(&topic, *p).and_then(|e| e.offset().to_raw()).filter(|o| *o >= 0)))
            .collect())
    })
    .await
    .map_err(|e| BusError::Topic { topic: "?".into(), reason: format!("offset reader task: {e}") })?
}
