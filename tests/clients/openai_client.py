"""The official `openai` Python package against rag-engine's
OpenAI-compatible endpoints, exactly as docs/integrations.md tells a user
to connect it: a base URL ending in /v1, an API key, a workspace as the
model. Asks a question, a streamed question and a follow-up (sending the
reply back as history, its sources list included); reads the citations
back and checks each against the document's raw text; checks that each
reply's content ends with its sources list (every [n] marker listed, each
quote the raw text at its link's span; streamed, the list whole in the last
content piece) and that `sources_in_content: false` leaves it out; and
checks the errors a client sees. Prints what it measured.

    RAG_BASE=http://127.0.0.1:8080 RAG_API_KEY=rag_... RAG_MODEL=<workspace id or name> python openai_client.py
"""

import os
import sys
import time

import openai
from openai import OpenAI
from sources_list import BASE, KEY, CheckFailed, check, check_sources, raw_text, split_sources

MODEL = os.environ["RAG_MODEL"]
QUESTION = os.environ.get("RAG_QUESTION", "Doanh thu năm 2023 là bao nhiêu?")
STREAMED = os.environ.get("RAG_STREAMED_QUESTION", "Lợi nhuận sau thuế năm 2023 là bao nhiêu?")
FOLLOW_UP = os.environ.get("RAG_FOLLOW_UP", "Còn năm 2022 thì sao?")

client = OpenAI(base_url=f"{BASE}/v1", api_key=KEY, timeout=600, max_retries=0)


def extra(obj, name):
    """A field rag-engine adds to OpenAI's shapes (the SDK keeps them)."""
    value = getattr(obj, name, None)
    if value is None and obj.model_extra:
        value = obj.model_extra.get(name)
    return value


def check_citations(content, citations, rag, listed=True):
    """Each citation: numbered as a marker in the answer, the raw text at its
    range; and (`listed`) the content's sources list, the same citations."""
    check(isinstance(citations, list), lambda: f"no citations: {citations!r}")
    if listed:
        check_sources(content, citations)
    answer = split_sources(content)[0]
    for i, c in enumerate(citations, 1):
        check(c["index"] == i, lambda: f"citation {i} has index {c['index']}")
        check(f"[{i}]" in answer, lambda: f"citation [{i}] has no marker in the answer: {answer!r}")
        text = raw_text(rag["workspace_id"], c["document_id"])
        check(text[c["char_start"] : c["char_end"]] == c["text"], lambda: f"citation [{i}] is not the raw text at its range: {c}")
        check(c["url"].startswith(BASE) and f"span={c['char_start']}-{c['char_end']}" in c["url"], lambda: c["url"])
    return len(citations)


def main():
    models = [m.id for m in client.models.list()]
    assert models, "the key reaches no workspace"
    workspace = MODEL if MODEL in models else None
    print(f"models: {len(models)} workspace(s)")

    t = time.monotonic()
    first = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": QUESTION}])
    message = first.choices[0].message
    rag = extra(message, "rag")
    workspace = workspace or rag["workspace_id"]
    cited = check_citations(message.content, extra(message, "citations"), rag)
    assert first.object == "chat.completion" and first.choices[0].finish_reason == "stop"
    heading = split_sources(message.content)[1]
    print(
        f"question: {time.monotonic() - t:.1f} s, {cited} citation(s) listed under {heading or '(no list)'}, "
        f"abstained={rag['abstained']}: {message.content[:120]!r}"
    )

    t = time.monotonic()
    first_chunk = first_words = None
    pieces, citations, rag_streamed, usage = [], None, None, None
    for chunk in client.chat.completions.create(
        model=MODEL, stream=True, stream_options={"include_usage": True}, messages=[{"role": "user", "content": STREAMED}]
    ):
        first_chunk = first_chunk or time.monotonic() - t
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            first_words = first_words or time.monotonic() - t
            pieces.append(delta.content)
        if chunk.choices[0].finish_reason == "stop":
            citations, rag_streamed = extra(delta, "citations"), extra(delta, "rag")
    text = "".join(pieces)
    assert text and rag_streamed is not None and usage is not None, (text, rag_streamed, usage)
    streamed_cited = check_citations(text, citations, rag_streamed)
    block = split_sources(text)[2]
    check(pieces[-1].endswith(block), lambda: f"the sources list did not come whole as the last content piece: {pieces[-1]!r}")
    print(
        f"streamed: first chunk {first_chunk:.2f} s, first words {first_words:.2f} s, whole {time.monotonic() - t:.1f} s, "
        f"{len(pieces)} content piece(s), {streamed_cited} citation(s) listed in the last, {usage.total_tokens} tokens: {text[:120]!r}"
    )

    follow = client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": message.content},
            {"role": "user", "content": FOLLOW_UP},
        ],
    )
    follow_message = follow.choices[0].message
    follow_rag = extra(follow_message, "rag")
    assert follow_rag["conversation_id"] == rag["conversation_id"], "the follow-up joins the conversation"
    follow_cited = check_citations(follow_message.content, extra(follow_message, "citations"), follow_rag)
    print(f"follow-up: {follow_cited} citation(s): {follow_message.content[:120]!r}")
    assert cited + streamed_cited + follow_cited > 0, "no answer cited anything"

    t = time.monotonic()
    bare = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": QUESTION}], extra_body={"sources_in_content": False}
    )
    bare_message = bare.choices[0].message
    check(
        split_sources(bare_message.content)[1] is None,
        lambda: f"sources_in_content: false, yet the content has a sources list: {bare_message.content!r}",
    )
    bare_cited = check_citations(bare_message.content, extra(bare_message, "citations"), extra(bare_message, "rag"), listed=False)
    print(
        f"sources_in_content false: {time.monotonic() - t:.1f} s, no list in the content, {bare_cited} citation(s) in `citations`: "
        f"{bare_message.content[:120]!r}"
    )

    for make, error, expected in [
        (lambda: OpenAI(base_url=f"{BASE}/v1", api_key="rag_wrong", max_retries=0).models.list(), openai.AuthenticationError, 401),
        (lambda: client.chat.completions.create(model="no-such-workspace", messages=[{"role": "user", "content": "x"}]), openai.NotFoundError, 404),
        (lambda: client.chat.completions.create(model=MODEL, messages=[]), openai.BadRequestError, 400),
    ]:
        try:
            make()
        except error as e:
            assert e.status_code == expected and e.body and "message" in e.body, e.body
        else:
            raise AssertionError(f"expected {error.__name__}")
    print("errors: 401, 404 and 400 as the SDK's exceptions")


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as e:
        print(f"FAILED: openai_client: {e}", file=sys.stderr)
        sys.exit(1)
    except AssertionError as e:
        print(f"FAILED: {e!r}", file=sys.stderr)
        raise
