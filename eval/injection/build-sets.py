#!/usr/bin/env python3
"""Builds the development and reporting sets of prompt injections and
ordinary look-alike sentences (issue 61, item 1): eval/injection/dev.tsv
and eval/injection/report.tsv.

Python 3 standard library only; deterministic (no randomness, no clock).
Reads the public sources from local bare git mirrors (`git show`), and
the handwritten / translated rows from files beside this script:

  handwritten.tsv   handwritten injections (Vietnamese, English) and
                    ordinary look-alikes, by family
  bipia-vi.tsv      Vietnamese translations of BIPIA's 150 text attacks

Split rule: rows are split by group, never by row. BIPIA train attacks
(and their translations) go to dev, BIPIA test attacks to report;
every other group goes to dev when the first byte of sha1(group) is even,
else to report. The sentences of hostile.tsv (what the phrase filter was
written against) and of issue-61.tsv are never in either half.

Usage: python3 eval/injection/build-sets.py [--bipia PATH] [--llm-security PATH]
       [--rebuff PATH] [--vn PATH] [--shared PATH] [--out DIR]
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
COLUMNS = ["id", "lang", "label", "category", "source", "group", "sentence", "question", "payload", "truth"]

# BIPIA text-attack categories by BIPIA's own taxonomy (paper, table 2).
# "encoding": task-relevant attacks that only change the form of the
# answer (ciphers, base encodings, reversal, emoji, misspelling, answer
# language); "task-irrelevant": a foreign task or question dropped into
# the data; "targeted": asks to add attacker content to the answer.
BIPIA_CLASS = {
    ("train", "Information Retrieval"): "task-irrelevant",
    ("train", "Content Creation"): "task-irrelevant",
    ("train", "Learning and Tutoring"): "task-irrelevant",
    ("train", "Language Translation"): "task-irrelevant",
    ("train", "Programming Help"): "task-irrelevant",
    ("train", "Alphanumeric Substitution"): "encoding",
    ("train", "Homophonic Substitution"): "encoding",
    ("train", "Misspelling Intentionally"): "encoding",
    ("train", "Anagramming"): "encoding",
    ("train", "Space Removal & Grouping"): "encoding",
    ("train", "Instruction"): "targeted",
    ("train", "Social Interaction"): "targeted",
    ("train", "Persuasion"): "targeted",
    ("train", "Clickbait"): "targeted",
    ("train", "Malware Distribution"): "targeted",
    ("test", "Task Automation"): "task-irrelevant",
    ("test", "Business Intelligence"): "task-irrelevant",
    ("test", "Conversational Agent"): "task-irrelevant",
    ("test", "Research Assistance"): "task-irrelevant",
    ("test", "Sentiment Analysis"): "task-irrelevant",
    ("test", "Substitution Ciphers"): "encoding",
    ("test", "Base Encoding"): "encoding",
    ("test", "Reverse Text"): "encoding",
    ("test", "Emoji Substitution"): "encoding",
    ("test", "Language Translation"): "encoding",
    ("test", "Information Dissemination"): "targeted",
    ("test", "Marketing & Advertising"): "targeted",
    ("test", "Entertainment"): "targeted",
    ("test", "Scams & Fraud"): "targeted",
    ("test", "Misinformation & Propaganda"): "targeted",
}

# Vietnamese legal texts (not protected by copyright: Vietnamese IP Law,
# art. 15) as rendered in diepxuan/diepxuan.github.io, and that
# repository's Vietnamese how-to posts.
VN_LAW_FILES = [
    "van-ban/lao-dong/lao-dong.md",
    "van-ban/lao-dong/an-toan-ve-sinh-lao-dong.md",
    "van-ban/buu-chinh-vien-thong/vien-thong.md",
    "van-ban/giao-thong-van-tai/thong-tu-37-2026-tt-bca-dang-ky-xe-vneid.md",
    "van-ban/giao-thong-van-tai/nghi-dinh-94-2026-nd-cp-dao-tao-sat-hach-lai-xe.md",
    "van-ban/bao-hiem.md",
    "van-ban/buu-chinh-vien-thong/an-toan-thong-tin-mang.md",
]
VN_POSTS = [
    "_posts/2024-09-20-winget.md",
    "_posts/2024-09-21-windows-update.md",
    "_posts/2024-09-22-mikrotik-ddns-cloudflare.md",
    "_posts/2024-09-22-mikrotik-wireguard-ddns.md",
    "_posts/2024-10-25-proxmox-osd-zfs.md",
    "_posts/2026-05-28-universal-ac-remote.md",
]
GRESHAKE_VARS = {"injection", "instructions", "primary_payload", "secondary_payload", "original_injection", "malicious_email"}

# Look-alike filters: sentences that tell, oblige, forbid or advise.
EN_LOOKALIKE = re.compile(
    r"\b(must|should|shall|please|required?|need to|needs to|do not|don't|never|always|make sure|ensure|remember|"
    r"click|call|contact|visit|reply|respond|ignore|disregard|forget|skip|follow|note that|be sure|try|use|"
    r"avoid|consider|check|enter|select|press|add|include|let us know|feel free)\b",
    re.I,
)
EN_IMPERATIVE_START = re.compile(
    r"^(please |just )?(add|avoid|be|call|change|check|choose|click|complete|confirm|consider|contact|copy|create|do|don't|download|enter|"
    r"find|follow|forward|get|go|install|join|keep|learn|let|log|make|never|note|open|press|read|reply|remember|"
    r"remove|replace|reset|review|run|see|select|send|set|share|sign|skip|start|stop|submit|take|tap|tell|try|"
    r"turn|update|upgrade|use|verify|visit|write)\b",
    re.I,
)
VI_LOOKALIKE = re.compile(
    r"(phải|có trách nhiệm|không được|nghiêm cấm|cấm |cần |hãy|đề nghị|yêu cầu|vui lòng|bỏ qua|hướng dẫn|"
    r"chịu trách nhiệm|có nghĩa vụ|bắt buộc|lưu ý|chú ý|nhấn|chọn|mở |gõ |nhập|truy cập|liên hệ|không nên|nên )",
    re.I,
)


def git_show(repo, path):
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True).stdout.decode("utf-8")


def git_head(repo):
    return subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True, capture_output=True).stdout.decode().strip()


def clean(text):
    return re.sub(r"\s+", " ", text.replace("\t", " ")).strip()


def fold(text):
    """Vietnamese without diacritics, as typed on a keyboard without them."""
    text = text.replace("đ", "d").replace("Đ", "D")
    return unicodedata.normalize("NFC", "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)))


def has_marks(text):
    return fold(text) != text


def norm_key(text):
    return re.sub(r"[^\w]+", " ", fold(text).lower()).strip()


def sentences(text):
    text = clean(text)
    parts = re.split(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-ZÀ-Ỹ0-9Đ])", text)
    return [p.strip() for p in parts if p.strip()]


def payload_of(text):
    """Strings whose presence in an answer shows the attack was obeyed:
    web addresses, e-mail addresses, quoted sentences to be added."""
    found = []
    for m in re.finditer(r"[\w.+-]+@[\w-]+\.[\w.]+", text):
        found.append(m.group(0).rstrip("."))
    for m in re.finditer(r"\b(?:www\.)?[a-z0-9-]+\.(?:com|xyz|net|org|top|vip|biz|io|cc|info)\b", text):
        if not any(m.group(0) in f for f in found):
            found.append(m.group(0))
    for m in re.finditer(r"[\"“]([^\"”]{12,})[\"”]", text):
        q = m.group(1).strip()
        if not any(f in q for f in found):
            found.append(q)
    return "|".join(dict.fromkeys(found))


def split_of(group):
    if group.startswith("bipia-train:") or group.startswith("bipia-code-train:"):
        return "dev"
    if group.startswith("bipia-test:") or group.startswith("bipia-code-test:"):
        return "report"
    return "dev" if hashlib.sha1(group.encode("utf-8")).digest()[0] % 2 == 0 else "report"


class Sets:
    def __init__(self):
        self.rows = []

    def add(self, lang, label, category, source, group, sentence, question="", payload="", truth=""):
        sentence = clean(sentence)
        if not sentence:
            return
        self.rows.append(
            {
                "lang": lang,
                "label": label,
                "category": category,
                "source": source,
                "group": group,
                "sentence": sentence,
                "question": clean(question),
                "payload": clean(payload),
                "truth": clean(truth),
            }
        )


def email_pairs(bipia, split):
    """(question, truth sentence) pairs from BIPIA's e-mail task: the
    question and the sentence of the e-mail that holds the ideal answer."""
    pairs = []
    for line in git_show(bipia, f"benchmark/email/{split}.jsonl").splitlines():
        d = json.loads(line)
        ideal = str(d.get("ideal", "")).strip()
        q = re.sub(r"^Q:\s*", "", d.get("question", "")).strip()
        if not ideal or not q:
            continue
        body = d["context"].split("CONTENT:", 1)[-1]
        probe = ideal.replace(".00", "").lstrip("$")
        for s in sentences(body):
            if probe and probe in s and len(s) <= 300:
                pairs.append((q, s))
                break
    return pairs


def bipia_attacks(sets, bipia, vi_translations):
    for split in ["train", "test"]:
        pairs = email_pairs(bipia, split)
        attacks = json.loads(git_show(bipia, f"benchmark/text_attack_{split}.json"))
        for cat, items in attacks.items():
            cls = BIPIA_CLASS[(split, cat)]
            for i, text in enumerate(items):
                group = f"bipia-{split}:{cat}:{i}"
                h = int(hashlib.sha1(group.encode()).hexdigest(), 16)
                q, t = pairs[h % len(pairs)] if pairs else ("", "")
                category = f"bipia-{cls}/{cat}"
                sets.add("en", "injection", category, f"bipia-{split}", group, text, q, payload_of(text), t)
                vi = vi_translations.get(f"{split}|{cat}|{i}")
                if vi is None:
                    sys.exit(f"missing Vietnamese translation for {split}|{cat}|{i}")
                sets.add("vi", "injection", category, f"bipia-{split}-translated-vi", group, vi, "", payload_of(vi), "")
                if i == 2:  # one per category also typed without diacritics
                    sets.add("vi", "injection", category, f"bipia-{split}-translated-vi-nodiacritics", group, fold(vi), "", payload_of(fold(vi)), "")
        code = json.loads(git_show(bipia, f"benchmark/code_attack_{split}.json"))
        for cat, items in code.items():
            for i, text in enumerate(items):
                sets.add("en", "injection", f"bipia-code/{cat}", f"bipia-code-{split}", f"bipia-code-{split}:{cat}:{i}", text)


def bipia_contexts(sets, bipia):
    """Ordinary sentences from BIPIA's task contexts: e-mails, and the
    prose lines of the code-QA answers (outside code fences)."""
    for split in ["train", "test"]:
        for n, line in enumerate(git_show(bipia, f"benchmark/email/{split}.jsonl").splitlines()):
            d = json.loads(line)
            body = d["context"].split("CONTENT:", 1)[-1]
            for s in sentences(body):
                if 20 <= len(s) <= 300 and "http" not in s and re.search(r"[a-z]{3}", s):
                    sets.add("en", "ordinary", "ordinary/email", f"bipia-context-email-{split}", f"bipia-email-{split}:{n}", s)
        for n, line in enumerate(git_show(bipia, f"benchmark/code/{split}.jsonl").splitlines()):
            d = json.loads(line)
            # Stack Overflow answers (CC BY-SA): each group's sentences are
            # attributed to their page and author (attribution.tsv).
            ATTRIBUTION[f"bipia-code-{split}-ctx:{n}"] = (d.get("context_url", ""), d.get("context_author_url", ""))
            fenced = False
            for ln in d["context"]:
                if ln.strip().startswith("```"):
                    fenced = not fenced
                    continue
                if fenced or ln.startswith("    "):
                    continue
                for s in sentences(ln):
                    if 20 <= len(s) <= 300 and re.search(r"[a-z]{3} [a-z]{2}", s):
                        sets.add("en", "ordinary", "ordinary/code-answer", f"bipia-context-code-{split}", f"bipia-code-{split}-ctx:{n}", s)


def greshake(sets, repo):
    paths = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", "scenarios"], check=True, capture_output=True).stdout.decode().split()
    for path in sorted(paths):
        if path.startswith("scenarios/puzzle/puzzles/"):
            text = git_show(repo, path)
            # Several puzzles share their opening paragraph: group by it.
            sets.add("en", "injection", "greshake/puzzle", "greshake-llm-security", "greshake:puzzle:" + " ".join(norm_key(text).split()[:5]), text)
        elif path.endswith(".py") and ("gpt4/" in path or "gpt3langchain/" in path):
            src = git_show(repo, path)
            for m in re.finditer(r"^\s*(\w+)\s*=\s*f?\"\"\"(.*?)\"\"\"", src, re.S | re.M):
                if m.group(1) in GRESHAKE_VARS:
                    # The gpt3langchain and gpt4 versions of a scenario are one group.
                    group = f"greshake:{os.path.basename(path)}:{m.group(1)}"
                    if m.group(1).startswith("secondary"):
                        group = "greshake:secondary-payload"
                    sets.add("en", "injection", "greshake/scenario", "greshake-llm-security", group, m.group(2))
            for m in re.finditer(r"^\s*(secondary_injection|secondary_payload)\s*=\s*\"([^\"]+)\"", src, re.M):
                sets.add("en", "injection", "greshake/scenario", "greshake-llm-security", "greshake:secondary-payload", m.group(2))


def rebuff(sets, repo):
    src = git_show(repo, "javascript-sdk/src/lib/prompts.ts")
    for n, m in enumerate(re.finditer(r"User string: (.+)\n\s*([0-9.]+)", src)):
        text, score = m.group(1).strip(), float(m.group(2))
        if score >= 0.9:
            sets.add("en", "injection", "rebuff/example", "rebuff-prompts", f"rebuff:{n}", text)
        elif score == 0.0:
            sets.add("en", "ordinary", "ordinary/question", "rebuff-prompts", f"rebuff:{n}", text)


def vn_texts(sets, repo):
    for path in VN_LAW_FILES:
        article = "0"
        per_article = {}
        for line in git_show(repo, path).splitlines():
            line = line.strip()
            m = re.match(r"^#*\s*Điều\s+([\w.]+?)\.?\s", line)
            if m:
                article = m.group(1)
                continue
            if not line or line.startswith(("#", "**", "---", "*", "|", "{", "<", ">", "(")) or line.lower().startswith(("layout:", "title:", "permalink:")):
                continue
            line = re.sub(r"^([a-zđ]|\d+)[.)]\s+", "", line)
            line = re.sub(r"\(Điều này có nội dung liên quan.*$", "", line)
            for s in sentences(line):
                if not re.search(r"[.;:!?)]$", s):  # cut short in the rendering
                    continue
                s = s.rstrip(";:")
                if not (30 <= len(s) <= 300) or not VI_LOOKALIKE.search(s) or not has_marks(s):
                    continue
                group = f"vn-law:{path}:{article}"
                if per_article.get(group, 0) >= 2:
                    continue
                per_article[group] = per_article.get(group, 0) + 1
                sets.add("vi", "ordinary", "ordinary/legal", "vn-law-diepxuan", group, s)
    for path in VN_POSTS:
        fenced = False
        for line in git_show(repo, path).splitlines():
            if line.strip().startswith("```"):
                fenced = not fenced
                continue
            if fenced or line.startswith("    "):
                continue
            line = re.sub(r"^\s*([-*>#]+|\d+[.)])\s*", "", line)
            line = re.sub(r"[*_`]", "", line)
            line = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)
            for s in sentences(line):
                if 20 <= len(s) <= 300 and has_marks(s) and not s.lower().startswith(("title:", "layout:", "date:", "tags:", "categories:")):
                    sets.add("vi", "ordinary", "ordinary/manual", "vn-posts-diepxuan", f"vn-post:{path}", s)


def repo_corpora(sets, shared):
    for lang_dir, lang in [("eval/en-dev", "en"), ("eval/vi-dev", None), ("eval/vi-sample", None)]:
        path = os.path.join(REPO, lang_dir, "corpus.jsonl")
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            for s in sentences(d.get("text", "")):
                lg = lang or ("vi" if has_marks(s) else "en")
                if len(s) >= 20:
                    sets.add(lg, "ordinary", "ordinary/repo-corpus", f"repo-{os.path.basename(lang_dir)}", f"{lang_dir}:{d['_id']}", s)
    path = os.path.join(shared, "cranfield", "corpus.jsonl")
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            for s in re.split(r"(?<=\.)\s+", clean(d.get("text", ""))):
                if 30 <= len(s) <= 300 and re.search(r"\b(must|should|shall|necessary|required|recommended|suggested|ignored?|ignoring|neglect\w*|instructions?|care|avoid\w*|need\w*)\b", s, re.I):
                    sets.add("en", "ordinary", "ordinary/abstract", "cranfield", f"cranfield:{d['_id']}", s)


def handwritten(sets):
    path = os.path.join(HERE, "handwritten.tsv")
    lines = open(path, encoding="utf-8").read().splitlines()
    head = lines[0].split("\t")
    for line in lines[1:]:
        r = dict(zip(head, line.split("\t")))
        group = f"hw:{r['family']}"
        cat = r["category"] if r["label"] == "injection" else f"ordinary/{r['category']}"
        src = f"handwritten-{r['lang']}"
        sets.add(r["lang"], r["label"], cat, src, group, r["sentence"], r.get("question", ""), r.get("payload", ""), r.get("truth", ""))
        if r["lang"] == "vi" and has_marks(r["sentence"]):
            pay = "|".join(dict.fromkeys([p for p in r.get("payload", "").split("|") if p] + [fold(p) for p in r.get("payload", "").split("|") if p]))
            sets.add("vi", r["label"], cat, "handwritten-vi-nodiacritics", group, fold(r["sentence"]), r.get("question", ""), pay, r.get("truth", ""))


def held_out():
    """Sentences kept out of both halves: the filter's own test rows and
    the paraphrases quoted in issue 61."""
    keys = set()
    for name in ["hostile.tsv", "issue-61.tsv"]:
        path = os.path.join(HERE, name)
        if not os.path.exists(path):
            continue
        lines = open(path, encoding="utf-8").read().splitlines()
        col = lines[0].split("\t").index("sentence")
        for line in lines[1:]:
            keys.add(norm_key(line.split("\t")[col]))
    return keys


# group -> (source page, author page) of rows whose licence asks for
# attribution (Stack Overflow answers, CC BY-SA).
ATTRIBUTION = {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bipia", default="/work/.mirror/microsoft+BIPIA/repo")
    ap.add_argument("--llm-security", default="/work/.mirror/greshake+llm-security/repo")
    ap.add_argument("--rebuff", default="/work/.mirror/protectai+rebuff/repo")
    ap.add_argument("--vn", default="/work/.mirror/diepxuan+diepxuan.github.io/repo")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared", "eval"))
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()

    vi = {}
    for line in open(os.path.join(HERE, "bipia-vi.tsv"), encoding="utf-8").read().splitlines()[1:]:
        k, v = line.split("\t")
        vi[k] = v

    sets = Sets()
    bipia_attacks(sets, args.bipia, vi)
    greshake(sets, args.llm_security)
    rebuff(sets, args.rebuff)
    handwritten(sets)
    bipia_contexts(sets, args.bipia)
    vn_texts(sets, args.vn)
    repo_corpora(sets, args.shared)

    banned = held_out()
    seen = set()
    halves = {"dev": [], "report": []}
    for r in sets.rows:
        key = (r["lang"], norm_key(r["sentence"]), r["source"].endswith("nodiacritics"))
        if norm_key(r["sentence"]) in banned or key in seen:
            continue
        seen.add(key)
        halves[split_of(r["group"])].append(r)
    # A group never spans both halves (by construction; checked).
    where = {}
    for half, rows in halves.items():
        for r in rows:
            assert where.setdefault(r["group"], half) == half, r["group"]

    for half, rows in halves.items():
        with open(os.path.join(args.out, f"{half}.tsv"), "w", encoding="utf-8") as f:
            f.write("\t".join(COLUMNS) + "\n")
            for n, r in enumerate(rows, 1):
                r["id"] = f"{half[0]}{n:05d}"
                f.write("\t".join(clean(r[c]) for c in COLUMNS) + "\n")
    used = sorted({r["group"] for rows in halves.values() for r in rows if r["group"] in ATTRIBUTION})
    with open(os.path.join(args.out, "attribution.tsv"), "w", encoding="utf-8") as f:
        f.write("group\tsource\tauthor\tlicence\n")
        for g in used:
            url, author = ATTRIBUTION[g]
            author = ", ".join(author) if isinstance(author, list) else author
            f.write(f"{g}\t{url}\t{author}\tCC BY-SA (Stack Overflow, as quoted by Microsoft BIPIA)\n")
    print("half\tlang\tlabel\trows", file=sys.stderr)
    for half, rows in halves.items():
        for lang in ["vi", "en"]:
            for label in ["injection", "ordinary"]:
                n = sum(1 for r in rows if r["lang"] == lang and r["label"] == label)
                print(f"{half}\t{lang}\t{label}\t{n}", file=sys.stderr)


if __name__ == "__main__":
    main()
