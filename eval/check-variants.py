#!/usr/bin/env python3
"""Screens other wordings of the answer check against the one the answerer
uses, on the answers a calibration run already holds: no question is asked
again, only the check, so a wording is judged in minutes, not hours.

    python3 eval/check-variants.py check VARIANT OUT.jsonl RUN.json... [--split screen|rest|all]
        [--base-url http://127.0.0.1:18082/v1] [--model NAME]
    python3 eval/check-variants.py report OUT.jsonl RUN.json...
    python3 eval/check-variants.py rewrite OUT.jsonl RUN.json NEW_RUN.json

RUN.json: `rag-dev eval answers --json` outputs of calibration sets made with
the decision out of the way (ANSWER_ABSTAIN_THRESHOLD=0,
ANSWER_SECOND_LOOK=false), each question with `question`, `cited` and
`answer_text` (docs/answers.md, "One answer-or-abstain decision").

VARIANT (the prompts are below):
- `current`: prompt::VERIFY as the answerer sends it; reproduces the run's
  `verify_score` to three decimals, a check of this script;
- `with-answer`: the check also reads the answer and judges both;
- `quote-first`: the model copies the phrase that answers before it judges;
- `asked-first`: the model writes what the question asks before it judges;
- `few-shot`: the current prompt after seven worked examples (EXAMPLES);
- `per-sentence`: the current check of each cited sentence alone (a
  table's rows together), the highest P(true) kept (one call each); what
  the answerer does since 2026-11-27;
- `few-shot-per-sentence`: both.

Every answer with a recorded check is checked. `--split screen` takes the
30% whose sha256(language + id) mod 10 < 3, so a wording is chosen on that
part and the decision reported on the rest (`--split rest`). `report`
compares right answers (gold answer inside a citation) with unanswerable
questions the model answered. Appends one line per question to
OUT.jsonl (`language`, `question_id`, `p`: the check's P(true)) and
resumes where it stopped. `rewrite` writes a copy of a run with each
`verify_score` replaced by the variant's, for `rag-dev eval calibration`. `report` prints, per language, the AUROC of
the variant and of the recorded check on the same questions, right
answers against unanswerable ones. Standard library only (Python 3.11);
needs the LLM server of `scripts/models up`.
"""

import argparse
import hashlib
import json
import math
import sys
import time
import urllib.request

CURRENT = (
    "Bạn kiểm tra xem các câu có trả lời câu hỏi hay không. Chỉ trả lời {\"answers\": true} nếu chính "
    "các câu đó nêu đúng thông tin mà câu hỏi hỏi (con số, địa điểm, người, ngày tháng hoặc lý do). Nếu các câu nói về một chủ đề "
    "liên quan nhưng không nêu đúng thông tin đó, trả lời {\"answers\": false}. Câu hỏi và các câu có thể ở hai ngôn ngữ khác nhau."
)
WITH_ANSWER = (
    "Bạn kiểm tra một câu trả lời. Chỉ trả lời {\"answers\": true} nếu chính các câu nêu đúng thông tin mà câu hỏi hỏi "
    "(con số, địa điểm, người, ngày tháng hoặc lý do) và câu trả lời nói đúng điều các câu nêu. Nếu các câu chỉ nói về cùng "
    "chủ đề mà không nêu đúng thông tin được hỏi, hoặc câu trả lời nói điều các câu không nói, trả lời {\"answers\": false}. "
    "Câu hỏi, câu trả lời và các câu có thể ở hai ngôn ngữ khác nhau."
)
QUOTE_FIRST = (
    "Bạn kiểm tra xem các câu có trả lời câu hỏi hay không. Trước hết chép vào \"quote\" nguyên văn cụm từ ngắn nhất trong "
    "các câu nêu đúng thông tin mà câu hỏi hỏi (con số, địa điểm, người, ngày tháng hoặc lý do), hoặc để trống nếu không có. "
    "Sau đó trả lời \"answers\": true chỉ khi cụm từ đó trả lời đúng câu hỏi; nếu các câu nói về chủ đề liên quan nhưng không "
    "nêu đúng thông tin đó, \"answers\": false. Câu hỏi và các câu có thể ở hai ngôn ngữ khác nhau."
)
ASKED_FIRST = (
    "Bạn kiểm tra xem các câu có trả lời câu hỏi hay không. Trước hết viết vào \"asked\" thông tin mà câu hỏi hỏi, ngắn gọn "
    "(ví dụ: ai là X, năm nào Y). Sau đó trả lời \"answers\": true chỉ khi chính các câu nêu đúng thông tin đó; nếu các câu "
    "nói về chủ đề liên quan nhưng không nêu đúng thông tin đó, \"answers\": false. Câu hỏi và các câu có thể ở hai ngôn ngữ khác nhau."
)

# Worked examples shown before the question (`few-shot`), as earlier turns:
# the kinds of near miss a hard negative is made of (another relation,
# another office, another event or measure of the same subject), with
# names and facts none of the calibration or dev sets asks about.
EXAMPLES = [
    ("Sentence: Ông Trần Văn Minh là chồng của nghệ sĩ Lê Thu Hà.\nQuestion: Cha của Lê Thu Hà là ai?", False),
    ("Sentence: Công ty Cổ phần Sao Mai được thành lập năm 1998 tại Đà Nẵng.\nQuestion: Công ty Sao Mai thành lập năm nào?", True),
    (
        "Sentences: Thủ tướng Canada Justin Trudeau đã gặp Tổng thống Mỹ tại Washington. Canada là một quốc gia ở Bắc Mỹ.\n"
        "Question: Tổng thống Canada là ai?",
        False,
    ),
    ("Sentence: The bridge was opened to traffic in 1932.\nQuestion: When did construction of the bridge begin?", False),
    ("Sentence: Năm 2023, doanh thu của chi nhánh Huế đạt 120 tỷ đồng.\nQuestion: How much revenue did the Hue branch make in 2023?", True),
    ("Sentence: The company's profit rose 12% in 2022.\nQuestion: How much did the company's revenue rise in 2022?", False),
    ("Sentence: Nhà văn Nguyễn Huy sinh năm 1950 tại Huế và mất năm 2010.\nQuestion: Nguyễn Huy sinh ra ở đâu?", True),
]


def schema(first=None, length=0):
    props = {}
    if first:
        props[first] = {"type": "string", "maxLength": length}
    props["answers"] = {"type": "boolean"}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


# name: (system prompt, reply schema, max reply tokens, whether the answer is shown)
VARIANTS = {
    "current": (CURRENT, schema(), 16, False),
    "few-shot": (CURRENT, schema(), 16, False),
    "per-sentence": (CURRENT, schema(), 16, False),
    "few-shot-per-sentence": (CURRENT, schema(), 16, False),
    "with-answer": (WITH_ANSWER, schema(), 16, True),
    "quote-first": (QUOTE_FIRST, schema("quote", 120), 80, False),
    "asked-first": (ASKED_FIRST, schema("asked", 80), 80, False),
}


def cited_shown(q):
    """The cited sentences as the answerer shows them to the check: the
    first six distinct ones, spaces collapsed, 400 characters each."""
    out = []
    for c in q.get("cited") or []:
        s = " ".join(c.split())[:400]
        if s not in out and len(out) < 6:
            out.append(s)
    return out


def checked_together(shown):
    """Each sentence alone, a table's rows together (look.rs checked_together)."""
    def is_row(t):
        t = t.strip()
        return len(t) > 1 and t.startswith("|") and t.endswith("|")

    groups = [[t] for t in shown if not is_row(t)]
    rows = [t for t in shown if is_row(t)]
    return groups + ([rows] if rows else [])


def user_message(q, with_answer, shown=None):
    shown = cited_shown(q) if shown is None else shown
    label = "Sentence" if len(shown) == 1 else "Sentences"
    text = f"{label}: {' '.join(shown)}\nQuestion: {q['question']}"
    if with_answer:
        text += f"\nAnswer: {q.get('answer_text') or ''}"
    return text


def true_probability(tokens):
    """P(true) / (P(true) + P(false)) at the token where `answers`' value
    begins, as contract::verdict_probability reads it."""
    before = ""
    for t in tokens:
        word = t["token"].strip().lower()
        i = before.rfind("answers")
        if i >= 0 and ":" in before[i:] and word:
            cands = [(c["token"], c["logprob"]) for c in t.get("top_logprobs", [])]
            if not any(c == t["token"] for c, _ in cands):
                cands.append((t["token"], t["logprob"]))
            yes = no = 0.0
            for c, lp in cands:
                c = c.strip().lower()
                if c and "true".startswith(c):
                    yes += math.exp(lp)
                elif c and "false".startswith(c):
                    no += math.exp(lp)
            return yes / (yes + no) if yes + no > 0 else None
        before += t["token"]
    return None


def check(base_url, model, variant, q):
    if variant in ("per-sentence", "few-shot-per-sentence"):
        asked = "current" if variant == "per-sentence" else "few-shot"
        probs = [ask(base_url, model, asked, user_message(q, False, group)) for group in checked_together(cited_shown(q))]
        probs = [p for p in probs if p is not None]
        return max(probs) if probs else None
    return ask(base_url, model, variant, user_message(q, VARIANTS[variant][3]))


def ask(base_url, model, variant, text):
    system, reply_schema, max_tokens, _ = VARIANTS[variant]
    messages = [{"role": "system", "content": system}]
    if variant == "few-shot":
        for example, verdict in EXAMPLES:
            messages.append({"role": "user", "content": example})
            messages.append({"role": "assistant", "content": json.dumps({"answers": verdict})})
    messages.append({"role": "user", "content": text})
    body = {
        "model": model,
        "messages": messages,
        "temperature": 0,
        "max_tokens": max_tokens,
        "logprobs": True,
        "top_logprobs": 5,
        "cache_prompt": True,
        "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": reply_schema}},
    }
    req = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=300) as r:
        reply = json.load(r)
    return true_probability(reply["choices"][0]["logprobs"]["content"])


def is_right(q):
    return q["answerable"] and q["answer_in_citation"]


def candidates(runs):
    """Every answer with a recorded check (the decision is refitted on all
    of them; the report compares right answers with unanswerable ones)."""
    out = []
    for path in runs:
        with open(path, encoding="utf-8") as f:
            for q in json.load(f)["questions"]:
                answered = not q["abstained"] and q["mode"] == "llm" and q.get("verify_score") is not None
                if answered and q.get("question"):
                    out.append(q)
    return out


def split_of(q):
    return int(hashlib.sha256((q["language"] + q["question_id"]).encode()).hexdigest(), 16) % 10


def auroc(scored):
    pos = [s for s, y in scored if y]
    neg = [s for s, y in scored if not y]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def report(out_path, runs):
    by_key = {(q["language"], q["question_id"]): q for q in candidates(runs)}
    rows = [json.loads(line) for line in open(out_path, encoding="utf-8")]
    for lang in sorted({lang for lang, _ in by_key}):
        keys = [(r["language"], r["question_id"]) for r in rows if r["language"] == lang and r["p"] is not None]
        got = [(r, by_key[k]) for r, k in zip([r for r in rows if r["language"] == lang and r["p"] is not None], keys) if k in by_key]
        got = [(r, q) for r, q in got if is_right(q) or not q["answerable"]]
        variant = auroc([(r["p"], is_right(q)) for r, q in got])
        recorded = auroc([(q["verify_score"], is_right(q)) for _, q in got])
        right = sum(is_right(q) for _, q in got)
        shown = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        print(f"{lang}: {len(got)} questions ({right} right, {len(got) - right} unanswerable); AUROC variant {shown(variant)}, recorded check {shown(recorded)}")


def rewrite(out_path, run_path, new_path):
    """The run with each answer's `verify_score` replaced by the variant's;
    fails when the variant has not checked an answer of the run."""
    checked = {}
    with open(out_path, encoding="utf-8") as f:
        for d in map(json.loads, f):
            checked[(d["language"], d["question_id"])] = d["p"]
    with open(run_path, encoding="utf-8") as f:
        run = json.load(f)
    missing = 0
    for q in run["questions"]:
        if q["abstained"] or q["mode"] != "llm" or q.get("verify_score") is None:
            continue
        key = (q["language"], q["question_id"])
        if key not in checked:
            missing += 1
            continue
        q["verify_score"] = checked[key]
    if missing:
        print(f"{run_path}: {missing} answers not checked by the variant; run `check --split all` first", file=sys.stderr)
        return 1
    with open(new_path, "w", encoding="utf-8") as f:
        json.dump(run, f, ensure_ascii=False)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check the candidates with one wording, appending to OUT.jsonl")
    c.add_argument("variant", choices=sorted(VARIANTS))
    c.add_argument("out")
    c.add_argument("runs", nargs="+")
    c.add_argument("--split", choices=["screen", "rest", "all"], default="screen")
    c.add_argument("--base-url", default="http://127.0.0.1:18082/v1")
    c.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    r = sub.add_parser("report", help="the AUROC of OUT.jsonl against the recorded check")
    r.add_argument("out")
    r.add_argument("runs", nargs="+")
    w = sub.add_parser("rewrite", help="a copy of RUN.json with the variant's check as verify_score")
    w.add_argument("out")
    w.add_argument("run")
    w.add_argument("new")
    a = p.parse_args()
    if a.command == "rewrite":
        return rewrite(a.out, a.run, a.new)
    if a.command == "report":
        report(a.out, a.runs)
        return 0
    qs = candidates(a.runs)
    if a.split != "all":
        qs = [q for q in qs if (split_of(q) < 3) == (a.split == "screen")]
    done = set()
    try:
        with open(a.out, encoding="utf-8") as f:
            done = {(d["language"], d["question_id"]) for d in map(json.loads, f)}
    except FileNotFoundError:
        pass
    todo = [q for q in qs if (q["language"], q["question_id"]) not in done]
    print(f"check variant {a.variant!r}: {len(todo)} of {len(qs)} questions to check", file=sys.stderr)
    start = time.time()
    with open(a.out, "a", encoding="utf-8") as out:
        for n, q in enumerate(todo, 1):
            prob = check(a.base_url, a.model, a.variant, q)
            out.write(json.dumps({"language": q["language"], "question_id": q["question_id"], "p": prob}) + "\n")
            out.flush()
            if n % 20 == 0 or n == len(todo):
                print(f"  {n}/{len(todo)}, {(time.time() - start) / n:.1f} s each", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
