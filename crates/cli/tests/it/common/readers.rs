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

pub fn sum_metric(text: &str, name: &str, fragments: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter(|l| fragments.iter().all(|f| l.contains(f)))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

/// Every record of a topic, read from the beginning until it stays quiet for 2 s.
pub async fn read_all(brokers: &str, topic: &str) -> Vec<rdkafka::message::OwnedMessage> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("reader-{}", uuid::Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "20")
        .create()
        .unwrap();
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        consumer.subscribe(&[&topic]).unwrap();
        let mut out = Vec::new();
        let mut idle = 0;
        while idle < 10 {
            match consumer.poll(Duration::from_millis(200)) {
                Some(Ok(m)) => {
                    out.push(m.detach());
                    idle = 0;
                }
                _ => idle += 1,
            }
        }
        out
    })
    .await
    .unwrap()
}
