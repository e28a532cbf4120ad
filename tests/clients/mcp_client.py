"""The official `mcp` Python SDK against rag-engine's MCP server at /mcp
(Streamable HTTP, a bearer API key), as docs/integrations.md connects an
agent: initialize, list the tools, call each one. Citations and passages
are read back and checked against the document's raw text; a foreign
workspace is a tool error. Prints what it measured.

    RAG_BASE=http://127.0.0.1:8080 RAG_API_KEY=rag_... RAG_MODEL=<workspace id> python mcp_client.py
"""

import asyncio
import json
import os
import time
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

BASE = os.environ["RAG_BASE"].rstrip("/")
KEY = os.environ["RAG_API_KEY"]
WORKSPACE = os.environ["RAG_MODEL"]
QUESTION = os.environ.get("RAG_QUESTION", "Doanh thu năm 2023 là bao nhiêu?")


def raw_text(document):
    req = urllib.request.Request(
        f"{BASE}/v1/workspaces/{WORKSPACE}/documents/{document}/raw-text", headers={"Authorization": f"Bearer {KEY}"}
    )
    with urllib.request.urlopen(req) as resp:
        return "".join(s["text"] for s in json.load(resp)["segments"])


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
            assert WORKSPACE in ids, ids

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
            for c in answer["citations"]:
                assert f"[{c['index']}]" in text, (c["index"], text)
                assert raw_text(c["document_id"])[c["char_start"] : c["char_end"]] == c["text"], c
                read = await session.call_tool(
                    "read_passage",
                    {"workspace": WORKSPACE, "document_id": c["document_id"], "char_start": c["char_start"], "char_end": c["char_end"]},
                )
                assert not read.is_error and read.structured_content["text"] == c["text"], read
            print(f"ask: {time.monotonic() - t:.1f} s, {len(answer['citations'])} citation(s): {answer['answer'][:120]!r}")

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


if __name__ == "__main__":
    asyncio.run(main())
