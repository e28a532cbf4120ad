"""LangChain's ChatOpenAI (langchain-openai) against rag-engine's
OpenAI-compatible endpoint, as docs/integrations.md connects it: a base URL
ending in /v1, an API key, a workspace as the model. LangChain keeps only
what OpenAI defines (no `citations`, no `rag`), so what its user sees of the
sources is the reply's content: `invoke` and `stream` (its pieces
accumulated) must each end with the sources list, every [n] marker of the
answer listed, every listed quote the raw text at its link's span
(whitespace runs as one space); streamed, the list comes whole as the last
content piece. Prints what it measured.

    RAG_BASE=http://127.0.0.1:8080 RAG_API_KEY=rag_... RAG_MODEL=<workspace id or name> python langchain_client.py
"""

import os
import sys
import time
from importlib.metadata import version

from langchain_openai import ChatOpenAI
from sources_list import BASE, KEY, CheckFailed, check, check_sources

MODEL = os.environ["RAG_MODEL"]
QUESTION = os.environ.get("RAG_QUESTION", "Doanh thu năm 2023 là bao nhiêu?")
STREAMED = os.environ.get("RAG_STREAMED_QUESTION", "Lợi nhuận sau thuế năm 2023 là bao nhiêu?")


def main():
    llm = ChatOpenAI(base_url=f"{BASE}/v1", api_key=KEY, model=MODEL, timeout=600, max_retries=0)

    t = time.monotonic()
    reply = llm.invoke(QUESTION)
    whole = time.monotonic() - t
    _, heading, _, entries = check_sources(reply.content)
    print(
        f"invoke (langchain-openai {version('langchain-openai')}): {whole:.2f} s, {len(entries)} source(s) "
        f"under {heading or '(no list)'}, each quoting the raw text: {reply.content[:120]!r}"
    )

    t = time.monotonic()
    first_content = None
    pieces = []
    for chunk in llm.stream(STREAMED):
        if chunk.content:
            first_content = first_content or time.monotonic() - t
            pieces.append(chunk.content)
    whole_streamed = time.monotonic() - t
    text = "".join(pieces)
    check(text, "the stream gave no content")
    _, streamed_heading, block, streamed_entries = check_sources(text)
    if streamed_heading:
        check(pieces[-1].endswith(block), lambda: f"the sources list did not come whole as the last content piece: {pieces[-1]!r}")
    print(
        f"stream: first content {first_content:.2f} s, whole {whole_streamed:.2f} s, {len(pieces)} content piece(s), "
        f"{len(streamed_entries)} source(s) in the last piece: {text[:120]!r}"
    )
    check(entries or streamed_entries, "no answer listed a source")


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as e:
        print(f"FAILED: langchain_client: {e}", file=sys.stderr)
        sys.exit(1)
