#!/usr/bin/env python3
"""Hand a document to rag-engine from an upstream system.

Stores the file's bytes in the object store under their SHA-256 (the
claim-check), then produces a DocumentUploaded event, Avro single-object
encoded, on `<TOPIC_PREFIX>documents.uploaded`, keyed by the document id.
rag-engine's pipeline takes it from there (parse, chunk, index).

    pip install -r examples/upstream/requirements.txt
    python examples/upstream/produce_document_uploaded.py report.pdf --workspace acme

Connection settings come from the same environment variables rag-engine
reads (KAFKA_BROKERS, TOPIC_PREFIX, S3_ENDPOINT, S3_REGION, S3_BUCKET,
S3_ACCESS_KEY, S3_SECRET_KEY). Prints the document id and where the event
went, as JSON. See docs/upstream.md.
"""

import argparse
import hashlib
import io
import json
import mimetypes
import os
import pathlib
import secrets
import sys
import time
import uuid

import boto3
from botocore.config import Config
from confluent_kafka import Producer
from fastavro import parse_schema, schemaless_writer
from fastavro.schema import fingerprint, to_parsing_canonical_form

REPO = pathlib.Path(__file__).resolve().parents[2]
SINGLE_OBJECT_MAGIC = b"\xc3\x01"


def uuid7() -> str:
    """A time-ordered UUIDv7 (rag-engine's chain-starting events use them)."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 68 & 0xFFF) << 64 | 0b10 << 62 | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=pathlib.Path)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--content-type", help="default: guessed from the file name")
    ap.add_argument("--uploaded-by", default="upstream-example")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--schema", type=pathlib.Path, default=REPO / "schemas" / "document_uploaded.avsc")
    args = ap.parse_args()

    data = args.file.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    content_type = args.content_type or mimetypes.guess_type(args.file.name)[0] or "application/octet-stream"
    if args.file.suffix.lower() in (".md", ".markdown"):
        content_type = args.content_type or "text/markdown"

    # 1. The claim-check: the original, content-addressed within the workspace.
    bucket = env("S3_BUCKET", "rag-engine")
    key = f"workspaces/{args.workspace}/originals/{sha256}"
    s3 = boto3.client(
        "s3",
        endpoint_url=env("S3_ENDPOINT", "http://127.0.0.1:19000"),
        region_name=env("S3_REGION", "us-east-1"),
        aws_access_key_id=env("S3_ACCESS_KEY", "rag-engine"),
        aws_secret_access_key=env("S3_SECRET_KEY", "rag-engine-secret"),
        config=Config(s3={"addressing_style": "path"}),
    )
    s3.put_object(Bucket=bucket, Key=key, Body=data, ContentType=content_type)

    # 2. The event, exactly as schemas/document_uploaded.avsc defines it.
    schema = parse_schema(json.loads(args.schema.read_text()))
    fp_hex = fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO")  # little-endian, as single-object wants
    event_id, document_id = uuid7(), uuid7()
    record = {
        "envelope": {
            "event_id": event_id,
            "occurred_at": int(time.time() * 1000),
            "workspace_id": args.workspace,
            "correlation_id": event_id,  # this upload starts the chain
            "causation_id": None,
            "producer": "upstream-example@1",
        },
        "document_id": document_id,
        "blob_uri": f"s3://{bucket}/{key}",
        "filename": args.file.name,
        "content_type": content_type,
        "size_bytes": len(data),
        "sha256": sha256,
        "uploaded_by": args.uploaded_by,
        "metadata": dict(kv.split("=", 1) for kv in args.meta),
    }
    body = io.BytesIO()
    schemaless_writer(body, schema, record)
    payload = SINGLE_OBJECT_MAGIC + bytes.fromhex(fp_hex) + body.getvalue()

    # 3. Produce it, keyed by the document id, and wait for the broker.
    topic = env("TOPIC_PREFIX") + "documents.uploaded"
    producer = Producer({
        "bootstrap.servers": env("KAFKA_BROKERS", "127.0.0.1:19092"),
        "enable.idempotence": True,
        "acks": "all",
    })
    delivered = {}

    def on_delivery(err, msg):
        delivered["error"] = err
        if err is None:
            delivered.update(partition=msg.partition(), offset=msg.offset())

    producer.produce(
        topic,
        key=document_id.encode(),
        value=payload,
        headers=[
            ("event-type", b"DocumentUploaded"),
            ("schema-fingerprint", fp_hex.encode()),
            ("event-id", event_id.encode()),
            ("correlation-id", event_id.encode()),
            ("workspace-id", args.workspace.encode()),
            ("content-type", b"application/vnd.apache.avro.single-object"),
        ],
        on_delivery=on_delivery,
    )
    producer.flush(30)
    if delivered.get("error") is not None or "offset" not in delivered:
        print(f"error: the event was not delivered: {delivered.get('error', 'no delivery report within 30 s')}", file=sys.stderr)
        return 1
    print(json.dumps({"document_id": document_id, "event_id": event_id, "blob_uri": record["blob_uri"],
                      "topic": topic, "partition": delivered["partition"], "offset": delivered["offset"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
