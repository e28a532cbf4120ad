"""The LlamaIndex side of `rag-dev bench` (part `llamaindex`).

Runs the corpus that `rag-dev bench` wrote (the same generated documents,
encoder texts, retrieval fixtures and queries it measured itself) through
LlamaIndex on this machine, with the same all-MiniLM-L6-v2 directory, and
prints one JSON object on stdout. Progress goes to stderr.

Started by scripts/llamaindex-bench, which creates the virtualenv; not meant
to be run by hand (the corpus layout is rag-engine's, see
crates/devtools/src/bench/llamaindex.rs).

What is measured, each the way a LlamaIndex user would do it by default:
- encoder: HuggingFaceEmbedding(model_dir).get_text_embedding_batch on the
  same texts, for the same number of seconds; word pieces counted with the
  model's own tokenizer ([CLS] and [SEP] included), as rag-engine counts.
- ingest (lexical): each Document AI JSON read, its text made a Document,
  SentenceSplitter(chunk_size=256) into nodes, BM25Retriever built over
  them. In memory: nothing is durable, unlike rag-engine's ingest.
- ingest (embeddings): the same with VectorStoreIndex(nodes, embed_model).
- retrieval: the fixture's chunks as TextNodes with their fixture vectors
  (so nothing is re-embedded), BM25Retriever (lexical), VectorStoreIndex's
  retriever (dense, query embedded by the model), QueryFusionRetriever of
  both with reciprocal-rank fusion (hybrid). Each query timed end to end;
  a mode stops after its time budget and says how many queries it timed.
"""

import argparse
import json
import os
import sys
import time
from array import array


def log(msg):
    print(f"llamaindex: {msg}", file=sys.stderr, flush=True)


def percentile(sorted_ms, p):
    if not sorted_ms:
        return None
    idx = round((len(sorted_ms) - 1) * p)
    return sorted_ms[min(idx, len(sorted_ms) - 1)]


def docai_text(path):
    with open(path, "rb") as f:
        doc = json.load(f)
    return doc.get("text", ""), max(1, len(doc.get("pages", [])))


def bench_encoder(embed, tokenizer, texts, seconds):
    embed.get_text_embedding_batch(texts)  # warm-up
    pieces_per_call = sum(len(tokenizer(t, truncation=True, max_length=256)["input_ids"]) for t in texts)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        embed.get_text_embedding_batch(texts)
        calls += 1
    secs = time.perf_counter() - start
    return {
        "word_pieces_per_second": calls * pieces_per_call / secs,
        "texts_per_second": calls * len(texts) / secs,
    }


def bench_ingest(files, embed=None):
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.retrievers.bm25 import BM25Retriever

    start = time.perf_counter()
    docs, pages = [], 0
    for path in files:
        text, n = docai_text(path)
        pages += n
        docs.append(Document(text=text, metadata={"file": os.path.basename(path)}))
    nodes = SentenceSplitter(chunk_size=256, chunk_overlap=0).get_nodes_from_documents(docs)
    BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=8)
    if embed is not None:
        VectorStoreIndex(nodes, embed_model=embed)
    secs = time.perf_counter() - start
    return {
        "documents": len(files),
        "pages": pages,
        "chunks": len(nodes),
        "seconds": secs,
        "pages_per_second": pages / secs,
        "chunks_per_second": len(nodes) / secs,
    }


def time_queries(name, retrieve, queries, budget_seconds):
    for q in queries[:10]:
        retrieve(q)  # warm-up, as rag-engine's first ten
    ms, started = [], time.perf_counter()
    for q in queries[10:]:
        t = time.perf_counter()
        result = retrieve(q)
        ms.append((time.perf_counter() - t) * 1000.0)
        if not result:
            raise SystemExit(f"no result for {q!r} ({name})")
        if time.perf_counter() - started > budget_seconds:
            break
    ms.sort()
    log(f"  {name:<8} p50 {percentile(ms, 0.5):.1f} ms  p99 {percentile(ms, 0.99):.1f} ms  ({len(ms)} queries)")
    return {"mode": name, "queries": len(ms), "p50_ms": percentile(ms, 0.5), "p99_ms": percentile(ms, 0.99), "max_ms": ms[-1]}


def default_hybrid(retrievers, top_k):
    """LlamaIndex's hybrid as its docs show it: QueryFusionRetriever with
    reciprocal-rank fusion over the given retrievers (also used by
    llamaindex_beir.py)."""
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    return QueryFusionRetriever(
        retrievers,
        similarity_top_k=top_k,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        # num_queries=1: the question is not rewritten, no LLM is called.
        llm=MockLLM(),
    )


def bench_retrieval(fixture_dir, embed, top_k, candidates, budget_seconds):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    with open(os.path.join(fixture_dir, "fixture.json")) as f:
        meta = json.load(f)
    with open(os.path.join(fixture_dir, "chunks.jsonl")) as f:
        texts = [json.loads(line) for line in f]
    dim = meta["dimension"]
    vectors = array("f")
    with open(os.path.join(fixture_dir, "vectors.f32"), "rb") as f:
        vectors.frombytes(f.read())
    if sys.byteorder != "little":
        vectors.byteswap()
    start = time.perf_counter()
    nodes = [
        TextNode(text=t, id_=f"c{i}", embedding=vectors[i * dim:(i + 1) * dim].tolist() if dim else None)
        for i, t in enumerate(texts)
    ]
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)
    bm25_candidates = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=candidates)
    index = VectorStoreIndex(nodes, embed_model=embed)
    dense = index.as_retriever(similarity_top_k=top_k)
    dense_candidates = index.as_retriever(similarity_top_k=candidates)
    hybrid = default_hybrid([dense_candidates, bm25_candidates], top_k)
    build = time.perf_counter() - start
    log(f"retrieval at {len(texts)} chunks: index built in {build:.1f} s")
    queries = meta["queries"]
    modes = [time_queries("lexical", bm25.retrieve, queries, budget_seconds)]
    modes.append(time_queries("dense", dense.retrieve, queries, budget_seconds))
    modes.append(time_queries("hybrid", hybrid.retrieve, queries, budget_seconds))
    return {"chunks": len(texts), "build_seconds": build, "modes": modes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--query-budget-seconds", type=float, default=60.0)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import torch
    import llama_index.core
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    with open(os.path.join(args.corpus, "corpus.json")) as f:
        corpus = json.load(f)
    threads = corpus.get("threads") or os.cpu_count()
    torch.set_num_threads(threads)
    log(f"llama-index-core {llama_index.core.__version__}, torch {torch.__version__} ({threads} threads), model {args.model}")
    embed = HuggingFaceEmbedding(model_name=args.model, device="cpu", embed_batch_size=corpus["encoder"]["batch"])
    tokenizer = embed._model.tokenizer
    out = {"versions": {"llama_index_core": llama_index.core.__version__, "torch": torch.__version__}, "threads": threads}

    log("encoder")
    out["encoder"] = bench_encoder(embed, tokenizer, corpus["encoder"]["texts"], corpus["encoder"]["seconds"])
    log(f"  {out['encoder']['word_pieces_per_second']:.0f} word pieces/s")

    ingest_dir = os.path.join(args.corpus, "ingest")
    files = sorted(
        (os.path.join(ingest_dir, n) for n in os.listdir(ingest_dir)),
        key=lambda p: int(os.path.basename(p).split("-")[1].split(".")[0]),
    )
    lexical = files[: corpus["ingest"]["lexical_documents"]]
    log(f"ingest, lexical: {len(lexical)} documents")
    out["ingest_lexical"] = bench_ingest(lexical)
    log(f"  {out['ingest_lexical']['pages_per_second']:.1f} pages/s")
    with_embeddings = files[: corpus["ingest"]["embedding_documents"]]
    log(f"ingest, with embeddings: {len(with_embeddings)} documents")
    out["ingest_embeddings"] = bench_ingest(with_embeddings, embed)
    log(f"  {out['ingest_embeddings']['pages_per_second']:.1f} pages/s")

    out["retrieval"] = []
    for name in sorted(os.listdir(os.path.join(args.corpus, "retrieval")), key=int):
        out["retrieval"].append(
            bench_retrieval(
                os.path.join(args.corpus, "retrieval", name),
                embed,
                corpus["retrieval"]["top_k"],
                corpus["retrieval"]["candidates"],
                args.query_budget_seconds,
            )
        )
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
