"""The official `mcp` Python SDK against rag-engine's MCP server at /mcp
(Streamable HTTP, a bearer API key), as docs/integrations.md connects an
agent: initialize, list the tools, call each one. Citations and passages
are read back and checked against the document's raw text, and so is the
sources list that ends `ask`'s text; a foreign workspace is a tool error.
Prints what it measured.

    RAG_BASE=http://127.0.0.1:8080 RAG_API_KEY=rag_... RAG_MODEL=<workspace id> python mcp_client.py
"""

import asyncio
import os
import sys
import time

import httpx2
import sources_list
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sources_list import BASE, KEY, CheckFailed, check, check_sources

WORKSPACE = os.environ["RAG_MODEL"]  # its name or id, as the tools take it
WORKSPACE_ID = os.environ.get("RAG_WORKSPACE_ID", WORKSPACE)  # the REST API's
QUESTION = os.environ.get("RAG_QUESTION", "Doanh thu năm 2023 là bao nhiêu?")


def raw_text(document):
    return sources_list.raw_text(WORKSPACE_ID, document)


def leaves(error):
    """The exceptions inside (the SDK's task groups wrap what fails in them)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for e in error.exceptions for leaf in leaves(e)]
    return [error]


async def refused(key):
    """What the SDK says when it connects with `key`: None if it connected."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    try:
        async with http, streamable_http_client(f"{BASE}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
    except Exception as e:  # noqa: BLE001 - what the SDK raises is what is checked
        return leaves(e)
    return None


async def main():
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=httpx2.Timeout(30, read=600))
    async with http, streamable_http_client(f"{BASE}/mcp", http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print(f"initialized: {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert {"list_workspaces", "search", "ask", "read_passage"} <= set(tools), tools.keys()
            print(f"tools: {', '.join(sorted(tools))}")

            r = await session.call_tool("list_workspaces", {})
            assert not r.is_error, r
            ids = [w["id"] for w in r.structured_content["workspaces"]]
            assert WORKSPACE_ID in ids, ids

            r = await session.call_tool("search", {"workspace": WORKSPACE, "query": QUESTION, "top_k": 3})
            assert not r.is_error, r
            passages = r.structured_content["passages"]
            assert passages, "search found nothing"
            for p in passages:
                assert raw_text(p["document_id"])[p["char_start"] : p["char_end"]] == p["text"], p
            print(f"search: {len(passages)} passage(s), best {passages[0]['filename']} p.{passages[0]['page']}")

            t = time.monotonic()
            r = await session.call_tool("ask", {"workspace": WORKSPACE, "question": QUESTION})
            assert not r.is_error, r
            answer = r.structured_content
            text = r.content[0].text
            _, heading, _, listed = check_sources(text, answer["citations"])
            for c in answer["citations"]:
                assert f"[{c['index']}]" in text, (c["index"], text)
                assert raw_text(c["document_id"])[c["char_start"] : c["char_end"]] == c["text"], c
                read = await session.call_tool(
                    "read_passage",
                    {"workspace": WORKSPACE, "document_id": c["document_id"], "char_start": c["char_start"], "char_end": c["char_end"]},
                )
                assert not read.is_error and read.structured_content["text"] == c["text"], read
            print(
                f"ask: {time.monotonic() - t:.1f} s, {len(answer['citations'])} citation(s), {len(listed)} listed in the text "
                f"under {heading or '(no list)'}: {answer['answer'][:120]!r}"
            )

            r = await session.call_tool("read_passage", {"workspace": WORKSPACE, "document_id": passages[0]["document_id"],
                                                         "char_start": passages[0]["char_start"], "char_end": passages[0]["char_end"]})
            assert not r.is_error and r.structured_content["text"] == passages[0]["text"], r

            for name, args in [
                ("search", {"workspace": "00000000-0000-0000-0000-000000000000", "query": "x"}),
                ("ask", {"workspace": "someone-elses", "question": "x"}),
                ("read_passage", {"workspace": WORKSPACE, "document_id": passages[0]["document_id"], "char_start": 5, "char_end": 10**9}),
                ("search", {"workspace": WORKSPACE, "query": "x", "top_k": 500}),
            ]:
                r = await session.call_tool(name, args)
                assert r.is_error, (name, args, r)
            print("errors: a foreign workspace, a range outside the text and a bad top_k are tool errors")

    bad = [("a wrong key", "rag_0123456789ab_" + "0" * 64, "invalid API key")]
    if os.environ.get("RAG_REVOKED_KEY"):
        bad.append(("a revoked key", os.environ["RAG_REVOKED_KEY"], "revoked"))
    for what, key, reason in bad:
        errors = await refused(key)
        check(errors, f"{what} was accepted")
        said = "; ".join(f"{type(e).__name__}: {e}" for e in errors)
        check(reason in said and "unauthorized" in said, lambda: f"{what}: the SDK does not say the key was refused ({reason!r}): {said}")
        print(f"{what}: {said}")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except* CheckFailed as group:  # the SDK's task groups wrap what fails in them
        for e in group.exceptions:
            print(f"FAILED: mcp_client: {e}", file=sys.stderr)
        sys.exit(1)
