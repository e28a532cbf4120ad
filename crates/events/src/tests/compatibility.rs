//! Every current schema must read data written with each released version
//! of itself. An incompatible edit to `schemas/<event>.avsc` fails here.

use crate::{Codec, EventType};
use apache_avro::schema::{Name, ResolvedSchema, Schema};
use apache_avro::schema_compatibility::SchemaCompatibility;
use apache_avro::types::Value;

/// A datum for any schema, with every optional branch filled in, so the
/// reader must resolve every field the writer knew.
fn sample(schema: &Schema, names: &std::collections::HashMap<Name, &Schema>) -> Value {
    match schema {
        Schema::Null => Value::Null,
        Schema::Boolean => Value::Boolean(true),
        Schema::Int => Value::Int(7),
        Schema::Long => Value::Long(7),
        Schema::Float => Value::Float(1.5),
        Schema::Double => Value::Double(2.5),
        Schema::String => Value::String("sample".into()),
        Schema::Bytes => Value::Bytes(vec![1, 2]),
        Schema::Uuid => Value::Uuid(uuid::Uuid::nil()),
        Schema::TimestampMillis => Value::TimestampMillis(1_700_000_000_000),
        Schema::Array(a) => Value::Array(vec![sample(&a.items, names)]),
        Schema::Map(m) => Value::Map([("k".to_string(), sample(&m.types, names))].into()),
        Schema::Union(u) => {
            let (i, branch) = u.variants().iter().enumerate().find(|(_, v)| !matches!(v, Schema::Null)).unwrap_or((0, &u.variants()[0]));
            Value::Union(i as u32, Box::new(sample(branch, names)))
        }
        Schema::Record(r) => Value::Record(r.fields.iter().map(|f| (f.name.clone(), sample(&f.schema, names))).collect()),
        Schema::Enum(e) => Value::Enum(0, e.symbols[0].clone()),
        Schema::Ref { name } => sample(names[name], names),
        other => panic!("sample(): extend the generator for {other:?}"),
    }
}

#[test]
fn current_schemas_read_every_released_version() {
    let codec = Codec::embedded().unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for event in EventType::ALL {
        let current = Schema::parse_str(event.current_schema_text()).unwrap();
        let released: Vec<_> = event.released_schemas().collect();
        assert!(!released.is_empty(), "{event}: no released version under schemas/released/");
        for r in released {
            let writer = Schema::parse_str(r.text).unwrap();
            let label = format!("{event}: schemas/{}.avsc vs released v{}", event.schema_stem(), r.version);
            if let Err(e) = SchemaCompatibility::can_read(&writer, &current) {
                failures.push(format!("{label}: the current schema cannot read data written with v{}: {e}", r.version));
                continue;
            }
            // Beyond the static check: write a datum with the old schema and
            // read it through the production codec into the typed event.
            let resolved = ResolvedSchema::try_from(&writer).unwrap();
            let names: std::collections::HashMap<Name, &Schema> = resolved.get_names().iter().map(|(n, s)| (n.clone(), *s)).collect();
            let datum = apache_avro::to_avro_datum(&writer, sample(&writer, &names)).unwrap();
            let mut bytes = vec![0xC3, 0x01];
            bytes.extend_from_slice(&writer.fingerprint::<apache_avro::rabin::Rabin>().bytes);
            bytes.extend_from_slice(&datum);
            match codec.decode_any(&bytes) {
                Ok(any) => assert_eq!(any.event_type(), event),
                Err(e) => failures.push(format!("{label}: a v{} datum does not decode: {e}", r.version)),
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "incompatible schema changes:\n  {}", failures.join("\n  "));
    assert!(checked >= EventType::ALL.len());
}

#[test]
fn released_versions_are_frozen() {
    // A released schema is a promise to the data already on the topics: it
    // may never change. Its canonical form's fingerprint is pinned here.
    let pinned = include_str!("../../../../schemas/released/FINGERPRINTS");
    let mut expected = std::collections::BTreeMap::new();
    for line in pinned.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(fp)) = (parts.next(), parts.next()) else { panic!("bad line {line:?}") };
        expected.insert(key.to_string(), fp.to_string());
    }
    let mut actual = std::collections::BTreeMap::new();
    for event in EventType::ALL {
        for r in event.released_schemas() {
            let schema = Schema::parse_str(r.text).unwrap();
            let fp: String = schema.fingerprint::<apache_avro::rabin::Rabin>().bytes.iter().map(|b| format!("{b:02x}")).collect();
            actual.insert(format!("{}/v{}", r.event, r.version), fp);
        }
    }
    let listing: String = actual.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
    assert_eq!(
        expected, actual,
        "schemas/released/FINGERPRINTS is out of date or a released schema was edited.\n\
         Released schemas are immutable; add a new version instead. Current listing:\n{listing}"
    );
}

#[test]
fn fingerprints_follow_the_specification_and_match_other_libraries() {
    // Computed by fastavro 1.13.1 (`fastavro.schema.fingerprint(to_parsing_canonical_form(s), "CRC-64-AVRO")`)
    // for schemas/released/document_uploaded/v1.avsc: an upstream producer
    // in Python or Java writes exactly these bytes after `C3 01`.
    let v1 = Schema::parse_str(include_str!("../../../../schemas/released/document_uploaded/v1.avsc")).unwrap();
    let hex: String = crate::codec::fingerprint(&v1).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "37f63e482df1c0a2");
    let form = crate::codec::parsing_canonical_form(&v1);
    assert!(form.contains(r#"{"name":"event_id","type":"string"}"#), "{form}");
    // Data written before (apache-avro's canonical form) still decodes.
    let codec = crate::Codec::embedded().unwrap();
    let event = crate::DocumentDeleted {
        envelope: crate::Envelope::originating("ws", "test"),
        document_id: uuid::Uuid::now_v7().to_string(),
        deleted_by: "u".into(),
    };
    let mut bytes = codec.encode(&event).unwrap();
    let current = Schema::parse_str(crate::EventType::DocumentDeleted.current_schema_text()).unwrap();
    assert_eq!(&bytes[2..10], &crate::codec::fingerprint(&current));
    bytes[2..10].copy_from_slice(&crate::codec::legacy_fingerprint(&current));
    let decoded: crate::DocumentDeleted = codec.decode(&bytes).unwrap();
    assert_eq!(decoded, event);
}
