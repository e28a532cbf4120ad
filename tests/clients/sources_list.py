"""What the Python clients (openai_client.py, langchain_client.py,
mcp_client.py) share: the documents' raw text, and the sources list a chat
reply's content ends with, parsed and checked against that raw text
(tests/clients/common.mjs does the same for the Node clients).

The contract: after the answer (whose sections carry [n] markers) a blank
line, `**Sources**` (`**Nguồn**` for a Vietnamese answer), a blank line,
then one item per citation,
`- [n] FILE[, p. P | , CELLS]: “QUOTE” ([open](BASE/#ws=…&c=…&doc=…&span=S-E&rev=N))`
(`mở` under `**Nguồn**`), QUOTE being the raw text at S..E (characters)
with each whitespace run shown as one space.
"""

import json
import os
import re
import urllib.parse
import urllib.request

BASE = os.environ["RAG_BASE"].rstrip("/")
KEY = os.environ["RAG_API_KEY"]

HEADINGS = {"**Sources**": "open", "**Nguồn**": "mở"}
ENTRY = re.compile(r"^- \[(\d+)\] (.+?): \u201c(.*)\u201d \(\[([^\]]+)\]\((\S+)\)\)$")
PLACE = re.compile(r", (p\. \d+|[^,]+![A-Z]+\d+(?::[A-Z]+\d+)?)$")
# Rust's char::is_whitespace (Unicode White_Space), as the server collapses a quote.
WHITESPACE = re.compile("[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
MARKER = re.compile(r"\[(\d+)\]")

_raw_texts = {}


class CheckFailed(AssertionError):
    """A check that failed, with a message that says what was expected."""


def check(condition, message):
    if not condition:
        raise CheckFailed(message() if callable(message) else message)


def raw_text(workspace, document):
    """A document's raw text, as the API gives it (its segments joined)."""
    if (workspace, document) not in _raw_texts:
        url = f"{BASE}/v1/workspaces/{urllib.parse.quote(workspace)}/documents/{urllib.parse.quote(document)}/raw-text"
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(req) as resp:
            _raw_texts[(workspace, document)] = "".join(s["text"] for s in json.load(resp)["segments"])
    return _raw_texts[(workspace, document)]


def collapse(text):
    return " ".join(t for t in WHITESPACE.split(text) if t)


def split_sources(content):
    """`(answer, heading, block, entries)`: the content before its sources list,
    the list's heading (None without one), the list as it stands in the
    content, and its entries as dicts (n, label, name, place, quote, word, url,
    ws, doc, start, end)."""
    at, heading = -1, None
    for h in HEADINGS:
        i = content.rfind(f"\n\n{h}\n")
        if i > at:
            at, heading = i, h
    if at < 0:
        return content, None, "", []
    block = content[at:]
    lines = block[2:].split("\n")
    check(len(lines) > 2 and lines[1] == "", lambda: f"the sources list has no blank line after {heading}, or no entry: {block!r}")
    entries = []
    for line in lines[2:]:
        m = ENTRY.match(line)
        check(m, lambda: f"not a sources entry (`- [n] FILE[, PLACE]: “QUOTE” ([{HEADINGS[heading]}](URL))`): {line!r}")
        n, label, quote, word, url = m.groups()
        place = PLACE.search(label)
        fragment = urllib.parse.parse_qs(urllib.parse.urlsplit(url).fragment)
        span = re.fullmatch(r"(\d+)-(\d+)", (fragment.get("span") or [""])[0])
        check(fragment.get("ws") and fragment.get("doc") and span, lambda: f"entry [{n}]: the link has no ws, doc or span: {url}")
        entries.append(
            {
                "n": int(n),
                "label": label,
                "name": label[: place.start()] if place else label,
                "place": place.group(1) if place else None,
                "quote": quote,
                "word": word,
                "url": url,
                "ws": fragment["ws"][0],
                "doc": fragment["doc"][0],
                "start": int(span.group(1)),
                "end": int(span.group(2)),
            }
        )
    return content[:at], heading, block, entries


def check_sources(content, citations=None):
    """Checks a reply's content: every [n] marker of its answer has an entry in
    the sources list and every entry a marker, numbered 1.. in order; each
    entry's quote is the raw text at its link's span, whitespace runs as one
    space; its link opens this server's page. With the structured citations
    (a client that keeps them) each entry is its citation. Returns
    `split_sources(content)`."""
    check(isinstance(content, str) and content, lambda: f"empty content: {content!r}")
    answer, heading, block, entries = split_sources(content)
    markers = sorted({int(m) for m in MARKER.findall(answer)})
    if markers:
        check(
            heading,
            lambda: f"the answer cites {markers} but its content has no sources list "
            f'(a "**Sources**" or "**Nguồn**" heading after a blank line): {content[-300:]!r}',
        )
    numbers = [e["n"] for e in entries]
    check(numbers == list(range(1, len(numbers) + 1)), lambda: f"the sources are not numbered 1.. in order: {numbers}")
    for n in markers:
        check(n in numbers, lambda: f"marker [{n}] has no entry in the sources list")
    for n in numbers:
        check(n in markers, lambda: f"source [{n}] has no marker in the answer")
    for e in entries:
        check(e["word"] == HEADINGS[heading], lambda: f"entry [{e['n']}]: link word {e['word']!r} under {heading}")
        check(e["url"].startswith(f"{BASE}/#"), lambda: f"entry [{e['n']}]: the link {e['url']} does not open {BASE}/")
        raw = raw_text(e["ws"], e["doc"])[e["start"] : e["end"]]
        check(len(raw) == e["end"] - e["start"], lambda: f"entry [{e['n']}]: span {e['start']}-{e['end']} lies outside the raw text")
        check(
            collapse(raw) == e["quote"],
            lambda: f"entry [{e['n']}]: the quote is not the raw text at {e['start']}-{e['end']}:\n"
            f"  quote: {e['quote']!r}\n  raw:   {collapse(raw)!r}",
        )
    if citations is not None:
        check(len(citations) == len(entries), lambda: f"{len(citations)} citation(s) but {len(entries)} source(s) listed")
        for c, e in zip(citations, entries):
            place = c.get("cell_range") or (f"p. {c['page']}" if c.get("page") is not None else None)
            check(e["url"] == c["url"], lambda: f"entry [{e['n']}]: link {e['url']}, citation {c['url']}")
            check(e["quote"] == collapse(c["text"]), lambda: f"entry [{e['n']}]: the quote differs from the citation's text")
            check(
                e["name"] == (c.get("filename") or c["document_id"]) and e["place"] == place,
                lambda: f"entry [{e['n']}]: {e['label']!r}, citation {c.get('filename')}, {place}",
            )
    return answer, heading, block, entries
