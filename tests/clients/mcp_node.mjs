// The TypeScript MCP SDK (@modelcontextprotocol/sdk, the official one)
// against rag-engine's MCP server at /mcp, as docs/integrations.md connects
// an agent: Streamable HTTP with the API key as a bearer header. Checks
// that connecting and listing the tools prints no warning (the SDK's Ajv
// warns about schema formats it does not know), calls each tool, reads
// every passage and citation back from the document's raw text, lets the
// SDK validate `ask`'s structured content against its declared
// outputSchema, and checks that a bad and a revoked key are a 401 the SDK
// reports as such. Prints what it measured.
//
//   RAG_BASE=http://127.0.0.1:8080 RAG_API_KEY=rag_... RAG_MODEL=<workspace id> \
//     RAG_NODE_DIR=<dir with node_modules> [RAG_REVOKED_KEY=rag_...] node mcp_node.mjs

import { BASE, KEY, MODEL, WORKSPACE_ID, QUESTION, check, checkCitations, checkSources, nodeRequire, packageVersion, rawSlice, run, seconds } from "./common.mjs";

const { Client } = nodeRequire("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport, StreamableHTTPError } = nodeRequire("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { AjvJsonSchemaValidator } = nodeRequire("@modelcontextprotocol/sdk/validation/ajv");
const SDK_VERSION = packageVersion("@modelcontextprotocol/sdk");

const TOOLS = ["ask", "list_workspaces", "read_passage", "search"];

/** Everything printed through console.warn / console.error and every process warning while `fn` runs. */
async function capturingWarnings(fn) {
  const said = [];
  const saved = { warn: console.warn, error: console.error };
  console.warn = (...args) => said.push(`console.warn: ${args.join(" ")}`);
  console.error = (...args) => said.push(`console.error: ${args.join(" ")}`);
  const onWarning = (w) => said.push(`process warning: ${w.name}: ${w.message}`);
  process.on("warning", onWarning);
  try {
    return { value: await fn(), said };
  } finally {
    Object.assign(console, saved);
    process.off("warning", onWarning);
  }
}

function connect(key) {
  const client = new Client({ name: "rag-engine-client-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  return { client, connected: client.connect(transport) };
}

async function call(client, name, args) {
  // An answer may take minutes on a busy machine: no 60 s default.
  return client.callTool({ name, arguments: args }, undefined, { timeout: 600_000 });
}

async function main() {
  // The capture itself: the SDK's validator warns about an unknown format.
  const canary = await capturingWarnings(async () => new AjvJsonSchemaValidator().getValidator({ type: "integer", format: "uint64" }));
  check(canary.said.some((s) => s.includes("uint64")), () => `the warning capture missed the SDK's own warning: ${JSON.stringify(canary.said)}`);

  let t = performance.now();
  const { client, listed, said } = await (async () => {
    const { value, said } = await capturingWarnings(async () => {
      const { client, connected } = connect(KEY);
      await connected;
      return { client, listed: await client.listTools() };
    });
    return { ...value, said };
  })();
  check(said.length === 0, () => `connecting and listing the tools printed ${said.length} warning(s):\n  ${said.join("\n  ")}`);
  const server = client.getServerVersion();
  console.log(`connected: ${server.name} ${server.version} with @modelcontextprotocol/sdk ${SDK_VERSION}, no warning (${seconds(performance.now() - t)})`);
  const tools = Object.fromEntries(listed.tools.map((tool) => [tool.name, tool]));
  check(TOOLS.every((name) => tools[name]), () => `tools: ${Object.keys(tools)}`);
  for (const name of TOOLS) {
    check(tools[name].outputSchema?.type === "object", () => `${name} declares no outputSchema`);
    const schemas = JSON.stringify([tools[name].inputSchema, tools[name].outputSchema]);
    check(!/"format":"(u?int\d+|double|float)"/.test(schemas), () => `${name}: a non-standard format in ${schemas}`);
  }
  console.log(`tools: ${Object.keys(tools).sort().join(", ")}; each declares an outputSchema`);

  let r = await call(client, "list_workspaces", {});
  check(!r.isError, () => `list_workspaces: ${JSON.stringify(r)}`);
  const ids = r.structuredContent.workspaces.map((w) => w.id);
  check(ids.includes(WORKSPACE_ID), () => `list_workspaces does not list ${WORKSPACE_ID}: ${ids}`);

  r = await call(client, "search", { workspace: MODEL, query: QUESTION, top_k: 3 });
  check(!r.isError, () => `search: ${JSON.stringify(r)}`);
  const passages = r.structuredContent.passages;
  check(passages.length > 0, "search found nothing");
  for (const p of passages) {
    const raw = await rawSlice(WORKSPACE_ID, p.document_id, p.char_start, p.char_end);
    check(raw === p.text, () => `search: a passage is not the raw text at ${p.char_start}-${p.char_end}: ${JSON.stringify(p.text)} vs ${JSON.stringify(raw)}`);
  }
  console.log(`search: ${passages.length} passage(s), each the raw text at its range; best ${passages[0].filename} p.${passages[0].page}`);

  t = performance.now();
  r = await call(client, "ask", { workspace: MODEL, question: QUESTION });
  const asked = performance.now() - t;
  check(!r.isError, () => `ask: ${JSON.stringify(r)}`);
  // callTool validated structuredContent against ask's outputSchema (it
  // throws otherwise); checked here again, and that the check can fail.
  const validate = new AjvJsonSchemaValidator().getValidator(tools.ask.outputSchema);
  const valid = validate(r.structuredContent);
  check(valid.valid, () => `ask: the structured content does not match the outputSchema: ${valid.errorMessage}`);
  check(!validate({ ...r.structuredContent, citations: [{ index: "1" }] }).valid, "ask's outputSchema accepts a malformed citation");
  const answer = r.structuredContent;
  const text = r.content.find((c) => c.type === "text")?.text ?? "";
  const cited = await checkCitations(answer.answer, answer.citations, WORKSPACE_ID);
  const split = await checkSources(text, answer.citations);
  check(split.answer.trimEnd() === answer.answer.trimEnd(), () => `ask: the text's answer differs from structured answer:\n  ${JSON.stringify(split.answer)}\n  ${JSON.stringify(answer.answer)}`);
  for (const c of answer.citations) {
    const read = await call(client, "read_passage", { workspace: MODEL, document_id: c.document_id, char_start: c.char_start, char_end: c.char_end });
    check(!read.isError && read.structuredContent.text === c.text, () => `read_passage of citation [${c.index}]: ${JSON.stringify(read)}`);
  }
  console.log(
    `ask: ${seconds(asked)}, ${cited} citation(s) valid against the outputSchema, each the raw text at its range and listed under ${split.heading ?? "(no list)"}; abstained=${answer.rag.abstained}: ${JSON.stringify(answer.answer.slice(0, 120))}`,
  );

  const p = passages.find((x) => x.char_start > 0) ?? passages[0];
  r = await call(client, "read_passage", { workspace: MODEL, document_id: p.document_id, char_start: p.char_start, char_end: p.char_end, context_chars: 40 });
  check(!r.isError && r.structuredContent.text === p.text, () => `read_passage: ${JSON.stringify(r)}`);
  const before = await rawSlice(WORKSPACE_ID, p.document_id, Math.max(0, p.char_start - 40), p.char_start);
  check(r.structuredContent.before === before, () => `read_passage: before is not the raw text before the range`);
  console.log(`read_passage: the range and the ${Array.from(before).length} characters before it, as the raw text has them`);

  for (const [name, args] of [
    ["search", { workspace: "00000000-0000-0000-0000-000000000000", query: "x" }],
    ["ask", { workspace: "someone-elses", question: "x" }],
    ["read_passage", { workspace: MODEL, document_id: p.document_id, char_start: 5, char_end: 1e9 }],
    ["search", { workspace: MODEL, query: "x", top_k: 500 }],
  ]) {
    r = await call(client, name, args);
    check(r.isError, () => `${name} ${JSON.stringify(args)} is not a tool error: ${JSON.stringify(r)}`);
  }
  console.log("errors: a foreign workspace, a range outside the text and a bad top_k are tool errors");
  await client.close();

  const bad = [["a wrong key", "rag_0123456789ab_" + "0".repeat(64), "invalid API key"]];
  if (process.env.RAG_REVOKED_KEY) bad.push(["a revoked key", process.env.RAG_REVOKED_KEY, "revoked"]);
  for (const [what, key, reason] of bad) {
    const { client: refused, connected } = connect(key);
    const error = await connected.then(
      () => null,
      (e) => e,
    );
    await refused.close().catch(() => {});
    check(error, () => `${what} was accepted`);
    check(error instanceof StreamableHTTPError && error.code === 401, () => `${what}: not an HTTP 401 error: ${error}`);
    check(error.message.includes(reason), () => `${what}: the error does not say why ("${reason}"): ${error.message}`);
    console.log(`${what}: ${error.message}`);
  }
}

await run("mcp_node", main);
