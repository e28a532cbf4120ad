"""Retrieval quality of LlamaIndex's default hybrid on a BEIR dataset, to set
beside `rag-dev eval retrieval DIR` on the same directory.

    scripts/llamaindex-bench --beir DIR --model MODEL_DIR [--max-queries N]
    scripts/llamaindex-bench --beir-self-test

Started by scripts/llamaindex-bench (which creates the pinned virtualenv).
DIR is a BEIR dataset: corpus.jsonl (`_id`, `title`, `text`),
queries.jsonl (`_id`, `text`), qrels/test.tsv (`query-id`, `corpus-id`,
`score`), e.g. from eval/beir-extract.sh. Prints one JSON object on stdout,
{"lexical": {...}, "dense": {...}, "hybrid": {...}, "run": {...}}, with the
key names `rag-dev eval retrieval --json` uses; progress goes to stderr.

Built as scripts/llamaindex_bench.py builds LlamaIndex (the way a
LlamaIndex user would by default):
- each corpus entry one Document, its text the title as a Markdown heading
  and the text (`# {title}\\n\\n{text}`, just the text when the title is
  empty), as rag-dev's evaluator writes it; the Document's id is the
  corpus id and it has no metadata (so nothing but the text is embedded
  or indexed);
- SentenceSplitter(chunk_size=256, chunk_overlap=0) into nodes (the
  bench's choice; LlamaIndex's own defaults are chunk_size=1024 and an
  overlap of 200 for SentenceSplitter, 20 through Settings:
  --chunk-size/--chunk-overlap change them). It counts tiktoken tokens,
  not the model's word pieces, so some nodes are longer than
  all-MiniLM-L6-v2's 256 word pieces and are truncated when embedded
  (NFCorpus: 742 of 6,930 nodes, at most 305; ArguAna: 113 of 11,243), as
  for any LlamaIndex user;
- lexical: BM25Retriever.from_defaults(nodes=..., similarity_top_k=100);
- dense: VectorStoreIndex(nodes, embed_model=HuggingFaceEmbedding(MODEL_DIR))
  .as_retriever(similarity_top_k=100);
- hybrid: QueryFusionRetriever([dense, lexical], similarity_top_k=100,
  num_queries=1, mode="reciprocal_rerank", use_async=False, llm=MockLLM())
  (num_queries=1: the query is not rewritten, no LLM is called).

Each judged query (qrels/test.tsv has a grade > 0 for it; in queries.jsonl
order; --max-queries N keeps the first N), as `rag-dev eval retrieval`
does: the top 100 nodes of each mode, mapped back to corpus ids through
their Document, each document at its best (first) rank; a document whose
id is the query's own id is dropped (BEIR's rule; ArguAna's queries are
arguments of its corpus). Metrics as BEIR reports them (pytrec_eval), the
same as crates/retrieval/src/metrics.rs: nDCG@10 with linear gains on the
grades as given, Recall@10 and Recall@100 and MRR@10 with grade > 0 as
relevant; means over the judged queries (a query with no hit counts 0).
"""

import argparse
import json
import math
import os
import sys
import time

TOP_K = 100


def log(msg):
    print(f"llamaindex-beir: {msg}", file=sys.stderr, flush=True)


# --- metrics (crates/retrieval/src/metrics.rs) ---------------------------


def ndcg_at(ranked, qrels, k):
    dcg = sum(max(qrels.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked, qrels, k):
    relevant = sum(1 for g in qrels.values() if g > 0)
    if relevant == 0:
        return 0.0
    return sum(1 for d in ranked[:k] if qrels.get(d, 0) > 0) / relevant


def mrr_at(ranked, qrels, k):
    for i, d in enumerate(ranked[:k]):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def summary(runs):
    s = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    for ranked, qrels in runs:
        s["ndcg@10"] += ndcg_at(ranked, qrels, 10)
        s["recall@10"] += recall_at(ranked, qrels, 10)
        s["recall@100"] += recall_at(ranked, qrels, 100)
        s["mrr@10"] += mrr_at(ranked, qrels, 10)
        s["queries"] += 1
    if s["queries"]:
        for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10"):
            s[key] /= s["queries"]
    return s


def self_test():
    """The hand-computed example of metrics.rs, plus one with ids to drop."""

    def close(a, b):
        assert abs(a - b) < 1e-12, (a, b)

    qrels = {"a": 3, "b": 1}
    close(ndcg_at(["a", "b"], qrels, 10), 1.0)
    # b first, then a: DCG = 1/log2(2) + 3/log2(3); IDCG = 3/log2(2) + 1/log2(3).
    close(ndcg_at(["b", "a"], qrels, 10), (1.0 + 3.0 / math.log2(3)) / (3.0 + 1.0 / math.log2(3)))
    # Only the top k count; a relevant document past k adds nothing.
    close(ndcg_at(["x", "a"], qrels, 1), 0.0)
    # Grade 0 in qrels is not relevant; a negative grade gains nothing.
    close(ndcg_at(["z", "a"], {"a": 1, "z": 0, "n": -1}, 10), 1.0 / math.log2(3))
    close(recall_at(["x", "a"], qrels, 10), 0.5)
    close(recall_at(["x", "a"], qrels, 1), 0.0)
    close(mrr_at(["x", "y", "b"], qrels, 10), 1.0 / 3.0)
    close(mrr_at(["x"], qrels, 10), 0.0)
    s = summary([(["a", "b"], qrels), ([], qrels)])
    assert s["queries"] == 2
    close(s["ndcg@10"], 0.5)
    close(s["recall@100"], 0.5)
    # Chunks back to documents: best rank kept, the query's own id dropped.
    assert to_ranking(["q1", "d2", "d1", "d2", "d3", "q1"], "q1") == ["d2", "d1", "d3"]
    # NFCorpus-like: grades 2 and 1, three relevant, found at ranks 2 and 4.
    qrels = {"d1": 2, "d2": 1, "d3": 1}
    ranked = ["x", "d1", "y", "d3"]
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    close(ndcg_at(ranked, qrels, 10), dcg / idcg)
    close(recall_at(ranked, qrels, 10), 2 / 3)
    close(mrr_at(ranked, qrels, 10), 0.5)
    log("metric self-test passed")


def to_ranking(doc_ids, query_id):
    """Corpus ids of ranked nodes: first (best) occurrence wins, the query's own id dropped."""
    ranking, seen = [], set()
    for d in doc_ids:
        if d is None or d == query_id or d in seen:
            continue
        seen.add(d)
        ranking.append(d)
    return ranking


# --- dataset ---------------------------------------------------------------


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 3:
                continue
            try:
                score = int(cols[2].strip())
            except ValueError:
                if i == 0:
                    continue  # header
                raise SystemExit(f"{path}:{i + 1}: score {cols[2]!r}")
            out.setdefault(cols[0], {})[cols[1]] = score
    return out


def document_text(entry):
    title = (entry.get("title") or "").strip()
    text = entry.get("text") or ""
    return f"# {title}\n\n{text}" if title else text


# --- run ---------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(prog="llamaindex-bench --beir")
    ap.add_argument("--beir", metavar="DIR")
    ap.add_argument("--model", metavar="MODEL_DIR")
    ap.add_argument("--max-queries", type=int, help="evaluate only the first N judged queries")
    ap.add_argument("--threads", type=int, help="torch threads (default: all CPUs)")
    ap.add_argument("--chunk-size", type=int, default=256, help="SentenceSplitter chunk_size (as llamaindex_bench.py: 256)")
    ap.add_argument("--chunk-overlap", type=int, default=0, help="SentenceSplitter chunk_overlap (as llamaindex_bench.py: 0)")
    ap.add_argument("--beir-self-test", action="store_true", help="check the metric code and exit")
    args = ap.parse_args(argv)
    self_test()
    if args.beir_self_test:
        return
    if not args.beir or not args.model:
        ap.error("--beir DIR and --model MODEL_DIR are required")
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        raise SystemExit(f"{args.model}: no model there (scripts/stack installs all-MiniLM-L6-v2)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.perf_counter()

    import torch
    import llama_index.core
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.retrievers.bm25 import BM25Retriever

    from llamaindex_bench import default_hybrid

    threads = args.threads or os.cpu_count()
    torch.set_num_threads(threads)

    corpus = read_jsonl(os.path.join(args.beir, "corpus.jsonl"))
    queries = read_jsonl(os.path.join(args.beir, "queries.jsonl"))
    qrels = read_qrels(os.path.join(args.beir, "qrels", "test.tsv"))
    judged = [q for q in queries if any(g > 0 for g in qrels.get(q["_id"], {}).values())]
    if args.max_queries is not None:
        judged = judged[: args.max_queries]
    if not corpus or not judged:
        raise SystemExit("the dataset has no documents or no judged queries")
    log(
        f"{len(corpus)} documents, {len(judged)} judged queries; llama-index-core {llama_index.core.__version__}, "
        f"torch {torch.__version__} ({threads} threads), model {args.model}"
    )

    t = time.perf_counter()
    docs = [Document(text=document_text(e), id_=str(e["_id"])) for e in corpus]
    splitter = SentenceSplitter(chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap)
    nodes = splitter.get_nodes_from_documents(docs)
    split_seconds = time.perf_counter() - t
    log(f"{len(nodes)} nodes in {split_seconds:.1f} s")

    t = time.perf_counter()
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=TOP_K)
    bm25_seconds = time.perf_counter() - t
    log(f"BM25 index in {bm25_seconds:.1f} s")

    embed = HuggingFaceEmbedding(model_name=args.model, device="cpu")
    t = time.perf_counter()
    log("embedding the nodes (VectorStoreIndex)")
    index = VectorStoreIndex(nodes, embed_model=embed, show_progress=True)
    embed_seconds = time.perf_counter() - t
    log(f"vector index in {embed_seconds:.1f} s ({len(nodes) / embed_seconds:.1f} nodes/s)")
    dense = index.as_retriever(similarity_top_k=TOP_K)
    hybrid = default_hybrid([dense, bm25], TOP_K)

    out, run = {}, {}
    query_seconds = {}
    hits_per_query = {}
    for name, retriever in (("lexical", bm25), ("dense", dense), ("hybrid", hybrid)):
        runs, hits = [], 0
        t = time.perf_counter()
        for i, q in enumerate(judged):
            result = retriever.retrieve(q["text"])
            ranking = to_ranking([r.node.ref_doc_id for r in result[:TOP_K]], q["_id"])
            hits += len(ranking)
            runs.append((ranking, qrels[q["_id"]]))
            if (i + 1) % 100 == 0:
                log(f"  {name}: {i + 1}/{len(judged)} queries")
        query_seconds[name] = time.perf_counter() - t
        hits_per_query[name] = hits / len(judged)
        out[name] = summary(runs)
        s = out[name]
        log(
            f"{name:<8} nDCG@10 {s['ndcg@10']:.4f}  R@10 {s['recall@10']:.4f}  R@100 {s['recall@100']:.4f}  "
            f"MRR@10 {s['mrr@10']:.4f}  ({query_seconds[name]:.1f} s, {hits_per_query[name]:.1f} documents/query)"
        )

    run.update(
        {
            "dataset": os.path.abspath(args.beir),
            "documents": len(corpus),
            "queries": len(judged),
            "nodes": len(nodes),
            "embedder": os.path.abspath(args.model),
            "top_k_nodes": TOP_K,
            "chunking": f"SentenceSplitter(chunk_size={args.chunk_size}, chunk_overlap={args.chunk_overlap})",
            "hybrid": "QueryFusionRetriever([dense, bm25], num_queries=1, mode=reciprocal_rerank), each side top 100",
            "versions": {
                "llama_index_core": llama_index.core.__version__,
                "torch": torch.__version__,
            },
            "threads": threads,
            "split_seconds": split_seconds,
            "bm25_index_seconds": bm25_seconds,
            "embed_index_seconds": embed_seconds,
            "query_seconds": query_seconds,
            "documents_per_query": hits_per_query,
            "total_seconds": time.perf_counter() - started,
        }
    )
    for pkg in ("llama-index-retrievers-bm25", "llama-index-embeddings-huggingface", "sentence-transformers", "bm25s"):
        try:
            from importlib.metadata import version

            run["versions"][pkg.replace("-", "_")] = version(pkg)
        except Exception:
            pass
    out["run"] = run
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
