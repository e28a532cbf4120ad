#!/usr/bin/env python3
"""Converts a SQuAD 2.0-style JSON file into the layout `rag-dev eval
retrieval DIR` and `rag-dev eval answers DIR` read (BEIR plus answers.jsonl,
as in eval/vi-dev):

    python3 eval/squad2-to-beir.py INPUT.json OUT_DIR [--format auto|mailong25|squad]
        [--articles N] [--seed S] [--max-questions N [--unanswerable M]] [--sha256 HEX] [--source TEXT]

OUT_DIR gets corpus.jsonl (`_id`, `title`, `text`), queries.jsonl (`_id`,
`text`), qrels/test.tsv (`query-id`, `corpus-id`, `score`), answers.jsonl
(`query-id`, `corpus-id`, `answer`; nulls for a question no passage answers)
and a README.md that says where the data came from and under which licence.
Standard library only (Python 3.11).

Two shapes of input:

- `mailong25`: the Vietnamese set of the public repository
  mailong25/bert-vietnamese-question-answering (dataset/train-v2.0.json, dataset/dev-v2.0.json). Each
  article's `title` is a question; each of its paragraphs is a search
  snippet with exactly one qa asking that question, `is_impossible` when the
  snippet does not answer it (a hard negative on the same topic). One query
  per distinct question text (articles that repeat a question are merged);
  its relevant passages are the snippets that answer it; a question that no
  snippet answers is unanswerable. Passages get no title: the article's
  title is the question itself.
- `squad`: SQuAD 2.0 (train-v2.0.json and files of its shape): articles
  with a title and paragraphs, each paragraph with many qas. One query per
  qa, its paragraph the relevant passage; an impossible qa is unanswerable
  (its paragraph, on the same topic, is then a hard negative). Passages are
  titled with their article's title (underscores as spaces).

`auto` picks `mailong25` when every paragraph has exactly one qa whose
question is its article's title, else `squad`.

The corpus is every distinct paragraph text (identical texts are one
passage) of the articles taken, ids p0001... in the order of first
appearance; queries are q0001... (answerable) and u0001... (unanswerable),
in source order, with their text exactly as in the source. --articles N
takes N whole articles drawn with --seed (kept in source order); the
corpus is then every paragraph of those articles. --max-questions N keeps N
of their questions, drawn with the seed so that the answerable/unanswerable
ratio stays (or with exactly M unanswerable ones: --unanswerable M); the
corpus keeps every paragraph. The same input and options
always give the same files.

The answer is the first answer's text as it stands in the passage (checked
against the passage at answer_start, else found in it). When a mailong25
question has several answering snippets, qrels lists them all and
answers.jsonl names the first one (the answer evaluation takes one passage
per question).
"""

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

LICENCES = {
    "mailong25": (
        "The source repository states no licence, so no licence to redistribute "
        "this data is given: this derived set is for local measurement only and "
        "is NOT to be committed or published."
    ),
    "squad": (
        "SQuAD 2.0 is distributed under CC BY-SA 4.0, and so is this "
        "derived set: credit Rajpurkar, Jia and Liang, \"Know What You Don't "
        "Know: Unanswerable Questions for SQuAD\" (ACL 2018), and share "
        "derivatives under the same licence."
    ),
}


def fail(message):
    print(f"squad2-to-beir: {message}", file=sys.stderr)
    sys.exit(2)


def warn(message):
    print(f"squad2-to-beir: warning: {message}", file=sys.stderr)


def detect_format(articles):
    for article in articles:
        for paragraph in article.get("paragraphs", []):
            qas = paragraph.get("qas", [])
            if len(qas) != 1 or qas[0].get("question") != article.get("title"):
                return "squad"
    return "mailong25"


def answer_in(context, qa, where):
    """The first answer's text as it stands in `context`, or None when the qa
    is impossible or has no answer."""
    if qa.get("is_impossible") or not qa.get("answers"):
        return None
    first = qa["answers"][0]
    text = first.get("text") or ""
    start = first.get("answer_start")
    if not text.strip():
        warn(f"{where}: empty answer text; question left out")
        return False
    if isinstance(start, int) and context[start:start + len(text)] == text:
        return text
    if text and text in context:
        warn(f"{where}: answer_start {start} does not point at {text!r}; found it elsewhere in the passage")
        return text
    stripped = text.strip()
    if stripped and stripped in context:
        warn(f"{where}: answer {text!r} found only without its outer spaces")
        return stripped
    warn(f"{where}: answer {text!r} is not in its passage; question left out")
    return False


class Corpus:
    def __init__(self):
        self.ids = {}  # text -> id
        self.rows = []

    def add(self, text, title):
        if text not in self.ids:
            self.ids[text] = None  # numbered once all are known
            self.rows.append({"text": text, "title": title})
        return text

    def number(self):
        width = max(4, len(str(len(self.rows))))
        for i, row in enumerate(self.rows, 1):
            row["_id"] = f"p{i:0{width}d}"
            self.ids[row["text"]] = row["_id"]


def questions_mailong25(articles, corpus):
    """One question per distinct question text: (text, [relevant texts], answer
    text or None, first answering passage text or None)."""
    by_text = {}
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            if not context.strip():
                warn(f"article {a} paragraph {p}: empty context left out")
                continue
            corpus.add(context, "")
            for qa in paragraph["qas"]:
                q = by_text.setdefault(qa["question"], {"text": qa["question"], "relevant": [], "answer": None, "gold": None})
                answer = answer_in(context, qa, f"article {a} paragraph {p} qa {qa.get('id')}")
                if answer:
                    if context not in q["relevant"]:
                        q["relevant"].append(context)
                    if q["answer"] is None:
                        q["answer"], q["gold"] = answer, context
    return list(by_text.values())


def questions_squad(articles, corpus):
    out = []
    for a, article in enumerate(articles):
        title = str(article.get("title", "")).replace("_", " ").strip()
        for p, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            if not context.strip():
                warn(f"article {a} paragraph {p}: empty context left out")
                continue
            corpus.add(context, title)
            for qa in paragraph["qas"]:
                answer = answer_in(context, qa, f"article {a} paragraph {p} qa {qa.get('id')}")
                if answer is False:
                    continue
                if answer is None and not qa.get("is_impossible"):
                    warn(f"qa {qa.get('id')}: not impossible but has no answer; left out")
                    continue
                relevant = [context] if answer else []
                out.append({"text": qa["question"], "relevant": relevant, "answer": answer, "gold": context if answer else None})
    return out


def cap_questions(questions, n, seed, n_unanswerable=None):
    """N questions drawn with the seed, keeping the answerable/unanswerable
    ratio (or with exactly `n_unanswerable` unanswerable ones, as many as
    there are), in source order."""
    if n is None or n >= len(questions):
        return questions
    answerable = [i for i, q in enumerate(questions) if q["answer"] is not None]
    unanswerable = [i for i, q in enumerate(questions) if q["answer"] is None]
    keep_a = round(n * len(answerable) / len(questions))
    if n_unanswerable is not None:
        keep_a = n - min(n_unanswerable, len(unanswerable), n)
    keep_u = n - keep_a
    if keep_a > len(answerable):
        keep_a, keep_u = len(answerable), n - len(answerable)
    if keep_u > len(unanswerable):
        keep_u, keep_a = len(unanswerable), n - len(unanswerable)
    rng = random.Random(f"questions:{seed}")
    kept = set(rng.sample(answerable, keep_a)) | set(rng.sample(unanswerable, keep_u))
    return [q for i, q in enumerate(questions) if i in kept]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", type=Path, help="SQuAD 2.0-style JSON file")
    ap.add_argument("out_dir", type=Path, help="directory to write the dataset into")
    ap.add_argument("--format", choices=["auto", "mailong25", "squad"], default="auto")
    ap.add_argument("--articles", type=int, help="take N whole articles, drawn with --seed (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    ap.add_argument("--max-questions", type=int, help="keep at most N questions, answerable/unanswerable ratio kept")
    ap.add_argument("--unanswerable", type=int, help="with --max-questions: exactly N of them unanswerable (as many as there are)")
    ap.add_argument("--sha256", help="expected sha256 of INPUT (hex); stop if it differs")
    ap.add_argument("--source", help="where INPUT came from, for the README (default: its path)")
    args = ap.parse_args()
    if args.articles is not None and args.articles < 1:
        fail("--articles must be at least 1")
    if args.max_questions is not None and args.max_questions < 1:
        fail("--max-questions must be at least 1")

    raw = args.input.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    print(f"squad2-to-beir: {args.input}: sha256 {digest}, {len(raw)} bytes", file=sys.stderr)
    if args.sha256 and args.sha256.strip().lower() != digest:
        fail(f"{args.input}: sha256 is {digest}, not the expected {args.sha256.strip().lower()}")
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        fail(f"{args.input}: not a JSON file: {e}")
    articles = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(articles, list) or not articles or not all(isinstance(a, dict) and isinstance(a.get("paragraphs"), list) for a in articles):
        fail(f"{args.input}: no data[] of articles with paragraphs[]: not a SQuAD 2.0-style file")
    fmt = detect_format(articles) if args.format == "auto" else args.format

    total_articles = len(articles)
    if args.articles is not None and args.articles < total_articles:
        picked = sorted(random.Random(args.seed).sample(range(total_articles), args.articles))
        articles = [articles[i] for i in picked]
    elif args.articles is not None:
        warn(f"--articles {args.articles}: the input has only {total_articles} articles; all taken")

    corpus = Corpus()
    questions = (questions_mailong25 if fmt == "mailong25" else questions_squad)(articles, corpus)
    corpus.number()
    available = len(questions)
    questions = cap_questions(questions, args.max_questions, args.seed, args.unanswerable)
    if not corpus.rows or not questions:
        fail("no passages or no questions")

    # Question texts that differ only in case or spacing: kept apart, as the source has them.
    folded = {}
    for q in questions:
        folded.setdefault(" ".join(q["text"].casefold().split()), []).append(q["text"])
    near = [v for v in folded.values() if len(set(v)) > 1]
    for v in near:
        warn(f"questions differing only in case or spacing kept apart: {sorted(set(v))!r}")
    repeated = sum(len(v) - 1 for v in folded.values() if len(set(v)) == 1 and len(v) > 1)

    queries, qrels, answers = [], [], []
    n_a = n_u = 0
    width = max(4, len(str(len(questions))))
    for q in questions:
        if q["answer"] is not None:
            n_a += 1
            qid = f"q{n_a:0{width}d}"
            for text in q["relevant"]:
                qrels.append((qid, corpus.ids[text]))
            answers.append({"query-id": qid, "corpus-id": corpus.ids[q["gold"]], "answer": q["answer"]})
        else:
            n_u += 1
            qid = f"u{n_u:0{width}d}"
            answers.append({"query-id": qid, "corpus-id": None, "answer": None})
        queries.append({"_id": qid, "text": q["text"]})

    relevant_ids = {c for _, c in qrels}
    negatives = len(corpus.rows) - len(relevant_ids)

    out = args.out_dir
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "corpus.jsonl", ({"_id": r["_id"], "title": r["title"], "text": r["text"]} for r in corpus.rows))
    write_jsonl(out / "queries.jsonl", queries)
    write_jsonl(out / "answers.jsonl", answers)
    with open(out / "qrels" / "test.tsv", "w", encoding="utf-8", newline="\n") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, cid in qrels:
            f.write(f"{qid}\t{cid}\t1\n")

    source = args.source or str(args.input)
    options = [f"--format {fmt}" + (" (detected)" if args.format == "auto" else "")]
    if args.articles is not None:
        options.append(f"--articles {args.articles}")
    if args.max_questions is not None:
        options.append(f"--max-questions {args.max_questions}")
    if args.unanswerable is not None:
        options.append(f"--unanswerable {args.unanswerable}")
    if args.articles is not None or args.max_questions is not None:
        options.append(f"--seed {args.seed}")
    if fmt == "mailong25":
        shape = (
            "one query per distinct question text (articles repeating a question merged); "
            "relevant passages: the snippets that answer it (answers.jsonl names the first); "
            "a question no snippet answers is unanswerable; passages untitled (the article title is the question)"
        )
    else:
        shape = (
            "one query per qa; relevant passage: its paragraph; an impossible qa is unanswerable "
            "(its paragraph, on the same topic, stays in the corpus as a hard negative); "
            "passages titled with their article's title"
        )
    notes = []
    if near:
        notes.append(f"- {len(near)} group(s) of question texts differ only in case or spacing; kept as separate queries, as in the source.")
    if repeated:
        notes.append(f"- {repeated} quer{'y repeats' if repeated == 1 else 'ies repeat'} the exact text of another (asked of different paragraphs in the source).")
    notes.append(
        "- An unanswerable question is one its source paragraphs do not answer; another passage of the "
        "corpus may occasionally answer it all the same."
    )
    readme = f"""# {out.name}

Generated by `eval/squad2-to-beir.py`; do not edit by hand.

- Source: {source}
- Input sha256: `{digest}` ({len(raw)} bytes)
- Options: {' '.join(options)}
- Articles: {len(articles)} of {total_articles}
- Passages: {len(corpus.rows)} ({len(relevant_ids)} relevant to some question, {negatives} relevant to none)
- Questions: {len(questions)} ({n_a} answerable, {n_u} unanswerable){f', drawn from {available}' if available != len(questions) else ''}
- Qrels: {len(qrels)}
- Shape: {shape}.

{chr(10).join(notes)}

Files: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`; the
text exactly as in the source), `qrels/test.tsv` (`query-id`, `corpus-id`, `score` 1),
`answers.jsonl` (`query-id`, `corpus-id`, `answer`: the answer text as it appears in
its passage; `null` and `null` for an unanswerable question). Use with
`rag-dev eval retrieval {out}` and `rag-dev eval answers {out}`.

## Licence

The data's licence is its source's. {LICENCES[fmt]}
"""
    with open(out / "README.md", "w", encoding="utf-8", newline="\n") as f:
        f.write(readme)

    print(
        f"{out}: {fmt}, {len(articles)}/{total_articles} articles, {len(corpus.rows)} passages "
        f"({negatives} relevant to none), {len(questions)} questions ({n_a} answerable, {n_u} unanswerable), "
        f"{len(qrels)} qrels, input sha256 {digest}"
    )


if __name__ == "__main__":
    main()
