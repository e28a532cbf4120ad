# Image of the rag-engine binary, used by docker-compose.yml.
FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends mold pkg-config zlib1g-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --bin rag-engine

FROM debian:bookworm-slim
# poppler-utils and tesseract: OCR of PDF pages without a text layer (OCR=auto).
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates poppler-utils tesseract-ocr tesseract-ocr-vie tesseract-ocr-eng && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/rag-engine /usr/local/bin/rag-engine
USER 65534
ENTRYPOINT ["rag-engine"]
