use crate::producer::traceparent;
use rag_events::Envelope;

#[test]
fn traceparent_is_w3c_shaped_and_shared_along_a_chain() {
    let upload = Envelope::originating("ws", "test");
    let parsed = Envelope::caused_by(&upload, "parser", "p");
    let a = traceparent(&upload);
    let b = traceparent(&parsed);
    let parts: Vec<&str> = a.split('-').collect();
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[0], "00");
    assert_eq!(parts[1].len(), 32);
    assert_eq!(parts[2].len(), 16);
    assert_eq!(parts[3], "01");
    // Same trace (the correlation id), different spans.
    assert_eq!(a.split('-').nth(1), b.split('-').nth(1));
    assert_ne!(a.split('-').nth(2), b.split('-').nth(2));
    // Non-UUID ids still give a valid context.
    let odd = Envelope { correlation_id: "upstream-42".into(), event_id: "x".into(), ..upload };
    let c = traceparent(&odd);
    assert_eq!(c.len(), 55);
    assert!(c.chars().all(|ch| ch.is_ascii_hexdigit() || ch == '-'));
}
