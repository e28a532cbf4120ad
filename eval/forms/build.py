#!/usr/bin/env python3
"""Builds the forms development set: question-answering queries in six forms
of question over one bilingual corpus, split by article into a tuning half
and a reporting half, in the layout `rag-dev eval retrieval DIR` and
`rag-dev eval answers DIR` read (BEIR plus answers.jsonl, as eval/vi-dev):

    python3 eval/forms/build.py [--out .local/eval/forms] [--seed N] [--llm-base URL]

Writes OUT/tune/ and OUT/report/ (corpus.jsonl, queries.jsonl,
qrels/test.tsv, answers.jsonl, README.md), OUT/sizes.md (the sizes table,
also printed), OUT/split.json (which article went where) and
OUT/translations.jsonl (the cache of every translation, keyed by direction
and source text: a rerun asks the model nothing it already asked).
eval/forms/README.md says where the data comes from, under which terms
(none of it may be committed), how each form is derived and how the
translations were judged.

Forms (query id `<form>-<kind><NNNN>`):
- `vi`: Vietnamese questions (UIT-ViQuAD 2.0, Wikipedia) as in the source;
- `en`: English SQuAD 2.0 questions as in the source;
- `envi`: the `vi` questions translated into English by the local LLM (same
  number as their `vi` question; the answer stays the Vietnamese span);
- `vien`: other English questions translated into Vietnamese by the LLM;
- `viplain`: the `vi` questions without diacritics (same numbers);
- `compound`: two questions of one language and half joined ("Q1? Ngoài
  ra, q2?" / "Q1? Also, q2?"), about half of each language.
Kinds: `q` answerable (qrels: its passage); `u` unanswerable, its own
paragraph (same topic) in the corpus as a hard negative; `x` a question of
a held-out article, none of whose passages is in the corpus.

Inputs are read from pinned commits of fetched git snapshots (no work
tree needed) or from files given with --vi-file / --en-file, and checked
against their pinned sha256. Everything but the translations is a function
of the inputs and --seed. Standard library only (Python 3.11).
"""

import argparse
import ast
import csv
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import time
import unicodedata
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SOURCES = {
    "vi": {
        "name": "UIT-ViQuAD 2.0, 1,000-question sample (800 answerable, 200 unanswerable) of IAmSkyDra/URASys",
        "url": "https://github.com/IAmSkyDra/URASys",
        "git": "/work/.mirror/IAmSkyDra+URASys/repo",
        "commit": "1313b8061e8d0456a1c1c922d04ddf381de4f07b",
        "path": "dataset/Viquad2_1000.csv",
        "sha256": "e9216f756fe61655fbfeb95f7fbbb3d338f9e844d79ebebbb45c0e3975fe6e26",
    },
    "en": {
        "name": "SQuAD 2.0 train-v2.0.json, its first 10 articles, as committed in PhongNTDo/guide_train_MRC_transformers",
        "url": "https://github.com/PhongNTDo/guide_train_MRC_transformers",
        "git": "/work/.mirror/PhongNTDo+guide_train_MRC_transformers/repo",
        "commit": "631a448de42714910b179afdf83799e01ff1bfaa",
        "path": "train-v2.0.json",
        "sha256": "53e67dd96e8597a8ef600e795d54d3fdef18486d42721884d38d652e2a2638cb",
    },
}
CALIBRATION = ROOT / "eval" / "calibration" / "en-squad" / "queries.jsonl"

FORMS = ["vi", "en", "envi", "vien", "viplain", "compound"]
KINDS = ["q", "u", "x"]
HALVES = ["tune", "report"]

SYSTEM = {
    "en": "Translate the question into English. Reply with the translated question only.",
    "vi": "Translate the question into Vietnamese. Reply with the translated question only.",
}
SYSTEM_RETRY = {
    "en": "Translate the user's question from Vietnamese into English. Do not answer it and do not explain. "
          "Reply with one line: the English question only.",
    "vi": "Translate the user's question from English into Vietnamese (tiếng Việt). Do not answer it and do not explain. "
          "Reply with one line: the Vietnamese question only.",
}
# The retry shows the model one worked example first (a 1.5B model otherwise
# often answers the question or copies it unchanged).
EXAMPLE = {
    "en": ("Thủ đô của Pháp được dời về Vichy vào năm nào?", "In what year was the capital of France moved to Vichy?"),
    "vi": ("In what year was the capital of France moved to Vichy?", "Thủ đô của Pháp được dời về Vichy vào năm nào?"),
}
RETRY_VERSION = 2  # bumped when the retry prompt changes: cached retries of older prompts are asked again

# Common function words, for telling a reply's language (names aside).
EN_WORDS = set(
    "the of what which who whom whose when where why how did does is was were are in to a an and for on by "
    "from with many much has have had that this at as after before during".split()
)
VI_WORDS = set(
    "là của gì nào những được không trong bao nhiêu người ai khi đâu các có với về cho này đã để từ theo mấy "
    "sao vì tại năm ngày thì mà đến như một nhất nước ông bà nơi đó nhiều bị làm".split()
)
VI_LETTERS = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")

# First words of a question that are never names: lower-cased after
# "Ngoài ra," / "Also,".
STARTERS = {
    "en": set(
        "what which who whom whose when where why how in on at for from during by to after before according is are "
        "was were do does did can could would will should has have had the a an as about approximately under with "
        "of besides other than along since since whom while if around apart roughly among following upon".split()
    ),
    "vi": set(
        "ai gì khi nào tại vì năm ngày tháng bao những các người điều sự theo trong ở từ sau trước có là lý nguyên "
        "vào đâu hai ba bốn năm một mục việc ông bà loại tên quốc nước thành vị phương cuộc số đến dựa nhờ với để "
        "mặc ngoài thời giai đâu cái chính đặc hình kể nhân tổ hệ quân nhà vùng dân tác kết mối nội công thế khu "
        "làm điểm giá ý lí lý lần lực ngành ngôn nền khoảng đối sản cơ chủ bên phần tỉ tỷ trên dưới thuật danh bộ".split()
    ),
}


MISSING = object()  # --offline and not in the cache


def log(message):
    print(f"[forms] {message}", file=sys.stderr, flush=True)


def fail(message):
    log(f"error: {message}")
    sys.exit(2)


# --------------------------------------------------------------------------- inputs

def read_source(key, file_arg):
    src = SOURCES[key]
    if file_arg:
        raw = Path(file_arg).read_bytes()
        where = str(file_arg)
    else:
        git_dir = os.environ.get(f"FORMS_{key.upper()}_GIT", src["git"])
        try:
            raw = subprocess.run(
                ["git", "-C", git_dir, "show", f"{src['commit']}:{src['path']}"],
                check=True, capture_output=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            detail = getattr(e, "stderr", b"") or b""
            fail(f"cannot read {src['path']} at {src['commit']} from {git_dir} ({detail.decode(errors='replace').strip() or e}); "
                 f"fetch {src['url']} or pass --{key}-file")
        where = f"{src['url']} {src['commit']}:{src['path']}"
    digest = hashlib.sha256(raw).hexdigest()
    if digest != src["sha256"]:
        fail(f"{where}: sha256 {digest}, not the pinned {src['sha256']}")
    log(f"{key}: {where}: sha256 {digest}, {len(raw)} bytes")
    return raw


def load_vi(raw):
    """UIT-ViQuAD 2.0 rows (paragraphs, question, answer): articles by
    Wikipedia title, in order of first appearance."""
    articles, by_title = [], {}
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    for n, row in enumerate(rows, 1):
        paragraphs = ast.literal_eval(row["paragraphs"])
        if len(paragraphs) != 1:
            log(f"vi row {n}: {len(paragraphs)} paragraphs, not 1; left out")
            continue
        title, context = paragraphs[0]["title"].strip(), paragraphs[0]["paragraph_text"]
        answer = ast.literal_eval(row["answer"]) if row["answer"].strip() else None
        if answer is not None and (not answer.strip() or answer not in context):
            log(f"vi row {n}: answer {answer!r} not in its paragraph; left out")
            continue
        art = by_title.get(title)
        if art is None:
            art = by_title[title] = {"lang": "vi", "title": title, "passages": [], "questions": []}
            articles.append(art)
        if context not in art["passages"]:
            art["passages"].append(context)
        art["questions"].append({"lang": "vi", "article": title, "text": row["question"].strip(),
                                 "passage": context, "answer": answer})
    return articles


def load_en(raw, exclude):
    """SQuAD 2.0 articles; one question per qa, its paragraph the passage."""
    doc = json.loads(raw.decode("utf-8-sig"))
    articles = []
    for a in doc["data"]:
        title = a["title"].replace("_", " ").strip()
        art = {"lang": "en", "title": title, "passages": [], "questions": []}
        for p in a["paragraphs"]:
            context = p["context"]
            if context not in art["passages"]:
                art["passages"].append(context)
            for qa in p["qas"]:
                answer = None
                if not qa.get("is_impossible"):
                    if not qa.get("answers"):
                        continue
                    first = qa["answers"][0]
                    text, start = first.get("text") or "", first.get("answer_start")
                    if isinstance(start, int) and text and context[start:start + len(text)] == text:
                        answer = text
                    elif text.strip() and text.strip() in context:
                        answer = text.strip()
                    else:
                        log(f"en qa {qa.get('id')}: answer {text!r} not in its paragraph; left out")
                        continue
                art["questions"].append({"lang": "en", "article": title, "text": qa["question"].strip(),
                                         "passage": context, "answer": answer})
        articles.append(art)
    # Question texts asked more than once (of different paragraphs) are ambiguous: left out.
    counts = Counter(q["text"] for art in articles for q in art["questions"])
    repeated = {t for t, c in counts.items() if c > 1}
    excluded = 0
    for art in articles:
        keep = []
        for q in art["questions"]:
            if q["text"] in exclude:
                excluded += 1
            elif q["text"] not in repeated:
                keep.append(q)
        art["questions"] = keep
    log(f"en: {excluded} calibration questions and {len(repeated)} repeated question texts left out")
    return articles


# --------------------------------------------------------------------------- split

def split_vi(articles, seed, holdout):
    """Articles shuffled with the seed, each given to the half with fewer
    questions; per half, the first articles in that order held out until
    about `holdout` of its questions are."""
    order = list(articles)
    random.Random(f"vi-split:{seed}").shuffle(order)
    halves = {h: [] for h in HALVES}
    size = Counter()
    for art in order:
        h = min(HALVES, key=lambda h: (size[h], HALVES.index(h)))
        halves[h].append(art)
        size[h] += len(art["questions"])
    out = {}
    for h in HALVES:
        target = round(holdout * size[h])
        held, n = [], 0
        for art in halves[h]:
            if n >= target:
                break
            if n + len(art["questions"]) <= target + 5:
                held.append(art)
                n += len(art["questions"])
        out[h] = {"corpus": [a for a in halves[h] if a not in held], "held": held}
    return out


def split_en(articles, seed):
    """Articles with unanswerable questions spread over the halves first (so
    each half has same-topic unanswerable ones), then the others, each to
    the half with fewer articles; per half one article without unanswerable
    questions held out."""
    rng = random.Random(f"en-split:{seed}")
    with_u = [a for a in articles if any(q["answer"] is None for q in a["questions"])]
    without_u = [a for a in articles if a not in with_u]
    rng.shuffle(with_u)
    rng.shuffle(without_u)
    halves = {h: [] for h in HALVES}
    for i, art in enumerate(with_u):
        halves[HALVES[i % 2]].append(art)
    for art in without_u:
        h = min(HALVES, key=lambda h: (len(halves[h]), sum(len(a["questions"]) for a in halves[h]), HALVES.index(h)))
        halves[h].append(art)
    out = {}
    for h in HALVES:
        candidates = [a for a in halves[h] if a in without_u] or halves[h][1:]
        held = candidates[:1]
        out[h] = {"corpus": [a for a in halves[h] if a not in held], "held": held}
    return out


# --------------------------------------------------------------------------- text forms

def plain(text):
    """Diacritics removed: NFD, combining marks dropped, đ->d, Đ->D."""
    text = text.replace("đ", "d").replace("Đ", "D")
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def mid_sentence_counts(texts):
    """Case-sensitive counts of words that follow another word and a space
    (so not at the start of a sentence)."""
    counts = Counter()
    for t in texts:
        counts.update(m.group(1) for m in re.finditer(r"(?<=\w )(\w+)", t))
    return counts


def lower_first(q, lang, counts):
    """The question with its first letter lower-cased, unless its first word
    looks like a name: internal capitals (iPod, UNESCO), a capitalised next
    word (Hồ Quý Ly, New York) unless the first is a common question opener,
    or a word the corpus writes capitalised mid-sentence more often than not."""
    m = re.match(r"\w+", q)
    if not m or not q[0].isupper():
        return q
    w = m.group(0)
    low = w[0].lower() + w[1:]
    if any(c.isupper() for c in w[1:]):
        return q
    words = q.split()
    starter = w.lower() in STARTERS[lang]
    if not starter:
        if len(words) > 1 and words[1][:1].isupper():
            return q
        if counts[low] <= counts[w]:
            return q
    return low + q[len(w):]


def strip_end(q):
    return q.rstrip().rstrip("?.!").rstrip()


def compound(q1, q2, lang, counts):
    glue = "Ngoài ra," if lang == "vi" else "Also,"
    return f"{strip_end(q1)}? {glue} {strip_end(lower_first(q2.strip(), lang, counts))}?"


# --------------------------------------------------------------------------- translation

def words(text):
    return re.findall(r"\w+", text.lower())


def language_scores(text):
    ws = words(text)
    en = sum(w in EN_WORDS for w in ws)
    vi = sum(w in VI_WORDS for w in ws) + sum(1 for w in ws if w not in VI_WORDS and any(c in VI_LETTERS for c in w))
    return en, vi


def check_reply(reply, source, target):
    """The cleaned reply, or None and why it is rejected."""
    text = (reply or "").strip()
    for _ in range(2):
        text = re.sub(r"^(translated question|translation|question|english|vietnamese|tiếng việt|câu hỏi)\s*:\s*",
                      "", text, flags=re.I).strip()
        if len(text) >= 2 and text[0] in "\"'“‘«" and text[-1] in "\"'”’»":
            text = text[1:-1].strip()
    if not text:
        return None, "empty"
    if "\n" in text:
        return None, "several lines"
    if len(text) > 2 * len(source) + 20:
        return None, "much longer than the source"
    if text == source.strip():
        return None, "unchanged"
    if source.rstrip().endswith("?") and not text.endswith(("?", "？")):
        return None, "not a question (an answer?)"
    en, vi = language_scores(text)
    if target == "en":
        vi_function = sum(w in VI_WORDS for w in words(text))
        if not (en >= 1 and en > vi_function):
            return None, "not English"
    if target == "vi" and not (vi >= 1 and vi > en):
        return None, "not Vietnamese"
    return text, None


class Translator:
    def __init__(self, cache_path, base, model, api_key, offline):
        self.cache_path, self.base, self.model, self.api_key, self.offline = cache_path, base, model, api_key, offline
        self.cache = {}
        if cache_path.exists():
            for line in cache_path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.cache[(r["direction"], r["source"])] = r
        self.calls = 0
        self.seconds = 0.0
        self.missing = 0

    def chat(self, messages):
        body = json.dumps({"model": self.model, "temperature": 0, "max_tokens": 80, "messages": messages}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(4):
            try:
                req = urllib.request.Request(f"{self.base.rstrip('/')}/chat/completions", data=body, headers=headers)
                with urllib.request.urlopen(req, timeout=600) as resp:
                    return json.loads(resp.read())["choices"][0]["message"]["content"] or ""
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                if attempt == 3:
                    fail(f"LLM at {self.base}: {e} (start it: RAG_LLM=qwen2.5-coder-1.5b scripts/models up)")
                log(f"LLM at {self.base}: {e}; again in 10 s")
                time.sleep(10)

    def lookup(self, text, target):
        """(final, result, reason, replies) from the cache alone."""
        direction = ("vi-" if target == "en" else "en-") + target
        hit = self.cache.get((direction, text))
        if hit is None:
            return False, None, None, []
        replies = list(hit["replies"][:1])
        result, reason = check_reply(replies[0], text, target)
        if result is None and hit.get("retry") == RETRY_VERSION and len(hit["replies"]) > 1:
            replies = hit["replies"][:2]
            result, reason = check_reply(replies[1], text, target)
        return result is not None or len(replies) > 1, result, reason, replies

    def pending(self, text, target):
        return not self.lookup(text, target)[0]

    def get(self, text, target, progress):
        """The accepted translation, None when dropped, MISSING with
        --offline when it is not cached. A cached first reply is checked
        again (the rules may have changed since); a retry is reused only if
        it was made with the current retry prompt."""
        direction = ("vi-" if target == "en" else "en-") + target
        final, result, reason, replies = self.lookup(text, target)
        if final:
            return result
        if self.offline:
            self.missing += 1
            return MISSING
        start = time.monotonic()
        if not replies:
            replies.append(self.chat([{"role": "system", "content": SYSTEM[target]}, {"role": "user", "content": text}]))
            result, reason = check_reply(replies[0], text, target)
        if result is None:
            ex_src, ex_out = EXAMPLE[target]
            replies.append(self.chat([
                {"role": "system", "content": SYSTEM_RETRY[target]},
                {"role": "user", "content": ex_src}, {"role": "assistant", "content": ex_out},
                {"role": "user", "content": text},
            ]))
            result, reason = check_reply(replies[1], text, target)
        self.calls += 1
        self.seconds += time.monotonic() - start
        record = {"direction": direction, "source": text, "text": result, "status": "ok" if result else "dropped",
                  "reason": reason if result is None else None, "replies": replies, "retry": RETRY_VERSION,
                  "model": self.model}
        self.cache[(direction, text)] = record
        with open(self.cache_path, "a", encoding="utf-8", newline="\n") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        n, total = progress
        log(f"translate {direction} {n}/{total}: {len(replies)} repl{'y' if len(replies) == 1 else 'ies'}, "
            f"{'ok' if result else 'dropped (' + reason + ')'}; {self.calls} asked in {self.seconds:.0f} s")
        return result


# --------------------------------------------------------------------------- build

def counts_split(n, half_index):
    """n compounds split between Vietnamese and English, the odd one
    alternating with the half."""
    vi = (n + 1) // 2 if half_index % 2 == 0 else n // 2
    return vi, n - vi


def build(args):
    exclude = {json.loads(l)["text"] for l in Path(args.calibration).read_text(encoding="utf-8").splitlines() if l.strip()}
    vi_articles = load_vi(read_source("vi", args.vi_file))
    en_articles = load_en(read_source("en", args.en_file), exclude)
    split = {"vi": split_vi(vi_articles, args.seed, args.holdout), "en": split_en(en_articles, args.seed)}

    counts = {lang: mid_sentence_counts(p for art in arts for p in art["passages"])
              for lang, arts in (("vi", vi_articles), ("en", en_articles))}

    # Per half and language: shuffled pools of in-corpus answerable,
    # in-corpus unanswerable and held-out questions, drawn without replacement.
    pools = {}
    for h in HALVES:
        for lang in ("vi", "en"):
            rng = random.Random(f"pool:{lang}:{h}:{args.seed}")
            inside = [q for art in split[lang][h]["corpus"] for q in art["questions"]]
            outside = [q for art in split[lang][h]["held"] for q in art["questions"]]
            pool = {"q": [q for q in inside if q["answer"] is not None],
                    "u": [q for q in inside if q["answer"] is None],
                    "x": list(outside)}
            for k in KINDS:
                rng.shuffle(pool[k])
            pools[(h, lang)] = pool

    def take(h, lang, kind, n):
        pool = pools[(h, lang)][kind]
        if len(pool) < n:
            log(f"{h}: only {len(pool)} {lang} questions of kind {kind} left, {n} wanted")
        got, pools[(h, lang)][kind] = pool[:n], pool[n:]
        return got

    want = {"q": args.answerable, "u": args.same_topic, "x": args.outside}
    # items: per half, list of (form, kind, number, text, [questions]) ; translations after the draws.
    items = {h: [] for h in HALVES}
    vien_candidates = {}
    for hi, h in enumerate(HALVES):
        for kind in KINDS:
            for i, q in enumerate(take(h, "vi", kind, want[kind]), 1):
                items[h].append({"form": "vi", "kind": kind, "n": i, "text": q["text"], "qs": [q]})
            for i, q in enumerate(take(h, "en", kind, want[kind]), 1):
                items[h].append({"form": "en", "kind": kind, "n": i, "text": q["text"], "qs": [q]})
        for kind in KINDS:
            n_vi, n_en = counts_split(want[kind], hi + KINDS.index(kind))
            made = []
            for lang, n in (("vi", n_vi), ("en", n_en)):
                qs = take(h, lang, kind, 2 * n)
                for a, b in zip(qs[0::2], qs[1::2]):
                    made.append((compound(a["text"], b["text"], lang, counts[lang]), [a, b]))
            for i, (text, qs) in enumerate(made, 1):
                items[h].append({"form": "compound", "kind": kind, "n": i, "text": text, "qs": qs})
        # vien: the rest of the English pools, in order, until enough translations are accepted.
        vien_candidates[h] = {kind: pools[(h, "en")][kind] for kind in KINDS}
        for it in [it for it in items[h] if it["form"] == "vi"]:
            items[h].append({"form": "viplain", "kind": it["kind"], "n": it["n"], "text": plain(it["text"]), "qs": it["qs"]})

    translator = Translator(args.out / "translations.jsonl", args.llm_base, args.llm_model, args.llm_key, args.offline)
    t0 = time.monotonic()
    envi_sources = [it for h in HALVES for it in items[h] if it["form"] == "vi"]
    todo = sum(1 for it in envi_sources if translator.pending(it["text"], "en"))
    log(f"envi: {len(envi_sources)} questions, {todo} not yet translated")
    done = 0
    dropped = Counter()
    for h in HALVES:
        for it in [it for it in items[h] if it["form"] == "vi"]:
            if translator.pending(it["text"], "en"):
                done += 1
            text = translator.get(it["text"], "en", (done, todo))
            if text is MISSING:
                continue
            if text is None:
                dropped[("envi", h, it["kind"])] += 1
                continue
            items[h].append({"form": "envi", "kind": it["kind"], "n": it["n"], "text": text, "qs": it["qs"]})
    total_vien = len(HALVES) * sum(want.values())
    done = 0
    for h in HALVES:
        for kind in KINDS:
            n = 0
            for q in vien_candidates[h][kind]:
                if n == want[kind]:
                    break
                if translator.pending(q["text"], "vi"):
                    done += 1
                text = translator.get(q["text"], "vi", (done, f"~{total_vien}"))
                if text is MISSING:
                    continue
                if text is None:
                    dropped[("vien", h, kind)] += 1
                    continue
                n += 1
                items[h].append({"form": "vien", "kind": kind, "n": n, "text": text, "qs": [q]})
            if n < want[kind]:
                log(f"{h}: only {n} vien questions of kind {kind}, {want[kind]} wanted")
    elapsed = time.monotonic() - t0
    if translator.calls:
        log(f"translation: {translator.calls} questions translated in {translator.seconds:.0f} s "
            f"({translator.seconds / translator.calls:.1f} s each); the rest from the cache")
    if translator.missing:
        log(f"--offline: {translator.missing} questions without a cached translation left out")

    sizes = {}
    for h in HALVES:
        write_half(args.out / h, h, split, items[h], args)
        for it in items[h]:
            sizes[(it["form"], h, it["kind"])] = sizes.get((it["form"], h, it["kind"]), 0) + 1
    table = sizes_table(sizes, split, dropped)
    (args.out / "sizes.md").write_text(table, encoding="utf-8")
    (args.out / "split.json").write_text(json.dumps({
        "seed": args.seed, "holdout_vi": args.holdout,
        **{f"{lang}-{h}-{part}": [a["title"] for a in split[lang][h][part]]
           for lang in ("vi", "en") for h in HALVES for part in ("corpus", "held")},
    }, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(table)
    log(f"wrote {args.out}/tune, {args.out}/report, sizes.md, split.json (translation phase {elapsed:.0f} s)")


def write_half(out, h, split, items, args):
    rows, ids = [], {}
    for lang, prefix in (("vi", "vp"), ("en", "ep")):
        n = 0
        for art in split[lang][h]["corpus"]:
            for text in art["passages"]:
                if text in ids:
                    continue
                n += 1
                ids[text] = f"{prefix}{n:04d}"
                rows.append({"_id": ids[text], "title": art["title"], "text": text})
    order = {f: i for i, f in enumerate(FORMS)}
    items = sorted(items, key=lambda it: (order[it["form"]], KINDS.index(it["kind"]), it["n"]))
    queries, qrels, answers = [], [], []
    for it in items:
        qid = f"{it['form']}-{it['kind']}{it['n']:04d}"
        queries.append({"_id": qid, "text": it["text"]})
        if it["kind"] != "q":
            answers.append({"query-id": qid, "corpus-id": None, "answer": None})
            continue
        cids = [ids[q["passage"]] for q in it["qs"]]
        for c in dict.fromkeys(cids):
            qrels.append((qid, c))
        if len(it["qs"]) == 1:
            answers.append({"query-id": qid, "corpus-id": cids[0], "answer": it["qs"][0]["answer"]})
        else:
            answers.append({"query-id": qid, "corpus-id": cids, "answer": [q["answer"] for q in it["qs"]]})
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "corpus.jsonl", rows)
    write_jsonl(out / "queries.jsonl", queries)
    write_jsonl(out / "answers.jsonl", answers)
    with open(out / "qrels" / "test.tsv", "w", encoding="utf-8", newline="\n") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, cid in qrels:
            f.write(f"{qid}\t{cid}\t1\n")
    n_vi = sum(1 for r in rows if r["_id"].startswith("vp"))
    (out / "README.md").write_text(f"""# forms/{h}

Generated by `eval/forms/build.py --seed {args.seed}`; do not edit by hand, do not commit
(eval/forms/README.md says how it is made and why it stays local).

- Corpus: {len(rows)} passages ({n_vi} Vietnamese `vp…`, {len(rows) - n_vi} English `ep…`) of
  {len(split['vi'][h]['corpus'])} Vietnamese and {len(split['en'][h]['corpus'])} English articles.
- Queries: {len(queries)}, ids `<form>-<kind><NNNN>`; qrels: {len(qrels)}.
- Use: `rag-dev eval retrieval {out}` and `rag-dev eval answers {out}`.

Terms: the Vietnamese part (UIT-ViQuAD 2.0, through IAmSkyDra/URASys) comes with no licence
to redistribute: local measurement only. The English part is SQuAD 2.0 (CC BY-SA 4.0).
""", encoding="utf-8")


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def sizes_table(sizes, split, dropped):
    head = "| form | tune q | tune u | tune x | report q | report u | report x | total q | total u+x (x) |\n"
    head += "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    lines = []
    for f in FORMS:
        cells = [sizes.get((f, h, k), 0) for h in HALVES for k in KINDS]
        tq = cells[0] + cells[3]
        tx = cells[2] + cells[5]
        tu = cells[1] + cells[4] + tx
        lines.append(f"| {f} | " + " | ".join(str(c) for c in cells) + f" | {tq} | {tu} ({tx}) |")
    passages = []
    for h in HALVES:
        pv = sum(len(a["passages"]) for a in split["vi"][h]["corpus"])
        pe = sum(len(a["passages"]) for a in split["en"][h]["corpus"])
        av, ae = len(split["vi"][h]["corpus"]), len(split["en"][h]["corpus"])
        hv, he = len(split["vi"][h]["held"]), len(split["en"][h]["held"])
        passages.append(f"- {h}: {pv + pe} passages ({pv} Vietnamese of {av} articles, {pe} English of {ae} articles); "
                        f"held out for `x`: {hv} Vietnamese and {he} English article(s)")
    drops = ", ".join(f"{f} {h} {k}: {n}" for (f, h, k), n in sorted(dropped.items())) or "none"
    return head + "\n".join(lines) + "\n\n" + "\n".join(passages) + f"\n- translations dropped (rejected twice): {drops}\n"


def models_env():
    env = {}
    path = ROOT / ".local" / "models.env"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"(?:export\s+)?(\w+)=(.*)", line.strip())
            if m:
                env[m.group(1)] = m.group(2).strip().strip("'\"")
    return env


def main():
    env = models_env()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / ".local" / "eval" / "forms", help="output directory (default .local/eval/forms)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the split and the draws (default 0)")
    ap.add_argument("--llm-base", default=os.environ.get("ANSWER_LLM_BASE_URL") or env.get("ANSWER_LLM_BASE_URL") or "http://127.0.0.1:18082/v1",
                    help="OpenAI-compatible base URL (default: ANSWER_LLM_BASE_URL, .local/models.env, or 127.0.0.1:18082/v1)")
    ap.add_argument("--llm-model", default=os.environ.get("ANSWER_LLM_MODEL") or env.get("ANSWER_LLM_MODEL") or "qwen2.5-coder-1.5b-instruct-q4_k_m")
    ap.add_argument("--offline", action="store_true", help="translate nothing: questions without a cached translation are left out")
    ap.add_argument("--answerable", type=int, default=80, help="answerable (q) queries per form and half (default 80)")
    ap.add_argument("--same-topic", type=int, default=15, help="unanswerable same-topic (u) queries per form and half (default 15)")
    ap.add_argument("--outside", type=int, default=15, help="unanswerable outside-the-corpus (x) queries per form and half (default 15)")
    ap.add_argument("--holdout", type=float, default=0.15, help="share of each half's Vietnamese questions whose articles are held out (default 0.15)")
    ap.add_argument("--vi-file", help="the Vietnamese CSV, instead of reading it from the fetched git snapshot")
    ap.add_argument("--en-file", help="the SQuAD 2.0 JSON, instead of reading it from the fetched git snapshot")
    ap.add_argument("--calibration", default=CALIBRATION, help="queries.jsonl whose question texts are left out (default eval/calibration/en-squad)")
    args = ap.parse_args()
    args.llm_key = os.environ.get("ANSWER_LLM_API_KEY") or env.get("ANSWER_LLM_API_KEY")
    args.out.mkdir(parents=True, exist_ok=True)
    build(args)


if __name__ == "__main__":
    main()
