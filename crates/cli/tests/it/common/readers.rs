//! Readers of what a process exports: its metrics, and a topic's records
//! (a group-less client, so the test's consumer groups are untouched).

use std::time::Duration;

/// The metrics a process serves on `port` (empty while it is not up).
pub async fn metrics_of(port: u16) -> String {
    match reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// One sample of the Prometheus text format: `name{k="v",...} value`.
struct Sample<'a> {
    name: &'a str,
    labels: Vec<(&'a str, String)>,
    value: f64,
}

/// Parses a sample line (None for comments, blank lines and anything else):
/// label values are unescaped (`\"`, `\\`, `\n`), so a match is on whole
/// names and values, never on a piece of the line.
fn sample(line: &str) -> Option<Sample<'_>> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let name_end = line.find(['{', ' '])?;
    let (name, mut rest) = line.split_at(name_end);
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices();
        let mut key_start = 0;
        loop {
            let (eq, _) = chars.by_ref().find(|(_, c)| *c == '=' || *c == '}')?;
            if body[eq..].starts_with('}') {
                rest = &body[eq + 1..];
                break;
            }
            let key = body[key_start..eq].trim_start_matches(',');
            chars.next().filter(|(_, c)| *c == '"')?;
            let mut value = String::new();
            loop {
                match chars.next()? {
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    (_, '"') => break,
                    (_, c) => value.push(c),
                }
            }
            labels.push((key, value));
            key_start = chars.clone().next().map_or(body.len(), |(i, _)| i);
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Sample { name, labels, value })
}

/// The sum of `name`'s samples whose labels include every `key="value"` of
/// `labels` (exactly: `stage="parser"` does not match `stage="parser-x"`).
pub fn sum_metric(text: &str, name: &str, labels: &[&str]) -> f64 {
    let wanted: Vec<(&str, &str)> = labels
        .iter()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("a label is key=\"value\": {l}"));
            (k, v.trim_matches('"'))
        })
        .collect();
    text.lines()
        .filter_map(sample)
        .filter(|s| s.name == name)
        .filter(|s| wanted.iter().all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v)))
        .map(|s| s.value)
        .sum()
}

/// Every record of a topic: read from the beginning up to its end as of the
/// call, then until it stays quiet for 2 s (a record on its way is waited
/// for). The partitions are assigned, not subscribed to: a group join under
/// a loaded CI run could outlast the quiet time, and the read then returned
/// nothing (a test failed on "one DocumentParsed" with the event there).
pub async fn read_all(brokers: &str, topic: &str) -> Vec<rdkafka::message::OwnedMessage> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Message, Offset, TopicPartitionList};
    const BROKER_WAIT: Duration = Duration::from_secs(10);
    const READ_WAIT: Duration = Duration::from_secs(60);
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("reader-{}", uuid::Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "20")
        .create()
        .unwrap();
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        // A topic the stages have not created yet, or whose partitions have
        // no leader yet, is asked again for a while (then read as empty).
        let (assignment, mut ends) = loop {
            let partitions: Vec<i32> = match consumer.fetch_metadata(Some(&topic), BROKER_WAIT) {
                Ok(m) => m
                    .topics()
                    .iter()
                    .filter(|t| t.name() == topic && t.error().is_none())
                    .flat_map(|t| t.partitions().iter().map(|p| p.id()))
                    .collect(),
                Err(_) => Vec::new(),
            };
            let mut assignment = TopicPartitionList::new();
            let mut ends = std::collections::HashMap::new();
            let mut known = !partitions.is_empty();
            for p in partitions {
                match consumer.fetch_watermarks(&topic, p, BROKER_WAIT) {
                    Ok((low, high)) => {
                        assignment.add_partition_offset(&topic, p, Offset::Beginning).unwrap();
                        if high > low {
                            ends.insert(p, high);
                        }
                    }
                    Err(_) => known = false,
                }
            }
            if known || started.elapsed() > BROKER_WAIT {
                break (assignment, ends);
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        consumer.assign(&assignment).unwrap();
        let mut out = Vec::new();
        let mut idle = 0;
        while !ends.is_empty() || idle < 10 {
            match consumer.poll(Duration::from_millis(200)) {
                Some(Ok(m)) => {
                    if ends.get(&m.partition()).is_some_and(|end| m.offset() + 1 >= *end) {
                        ends.remove(&m.partition());
                    }
                    out.push(m.detach());
                    idle = 0;
                }
                _ => {
                    // A partition whose last records are not messages
                    // (transaction markers) ends where the reader stands.
                    if let Ok(positions) = consumer.position() {
                        for e in positions.elements() {
                            if let (Offset::Offset(at), Some(end)) = (e.offset(), ends.get(&e.partition())) {
                                if at >= *end {
                                    ends.remove(&e.partition());
                                }
                            }
                        }
                    }
                    if ends.is_empty() {
                        idle += 1;
                    }
                }
            }
            assert!(
                ends.is_empty() || started.elapsed() < READ_WAIT,
                "{topic}: partitions {:?} not read to their end in {READ_WAIT:?}",
                ends.keys()
            );
        }
        out
    })
    .await
    .unwrap()
}

#[test]
fn metric_sums_match_whole_names_and_label_values() {
    let text = "# HELP rag_x_total x\n\
                rag_x_total{stage=\"parser\",kind=\"a\\\"b\"} 2\n\
                rag_x_total{stage=\"parser-x\",kind=\"a\\\"b\"} 5\n\
                rag_x_total_sum{stage=\"parser\"} 7\n\
                rag_x_total 1\n";
    assert_eq!(sum_metric(text, "rag_x_total", &[]), 8.0);
    assert_eq!(sum_metric(text, "rag_x_total", &["stage=\"parser\""]), 2.0);
    assert_eq!(sum_metric(text, "rag_x_total", &["kind=\"a\"b\""]), 7.0);
    assert_eq!(sum_metric(text, "rag_x_total_sum", &[]), 7.0);
    assert_eq!(sum_metric(text, "rag_x", &[]), 0.0);
}
