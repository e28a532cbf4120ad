// The MCP Inspector CLI (@modelcontextprotocol/inspector, the official
// one) against rag-engine's MCP server, run the way its documentation says
// to in scripts and CI (`--stored-auth-only`: never start an interactive
// OAuth login): `tools/list` with the API key lists the four tools and
// prints nothing else (no schema portability warning); `tools/call` answers;
// a wrong and a revoked key are refused as a 401 whose reason the CLI shows
// (exit 3, auth_required, "invalid API key" / "… revoked"), not as an
// OAuth or TTY problem. Without the flag the CLI starts its OAuth flow on
// any 401, whatever the server's challenge says (that is printed, not
// checked). Runs with its own HOME, so nothing is read from or written to
// ~/.mcp-inspector.
//
//   RAG_BASE=... RAG_API_KEY=rag_... RAG_MODEL=<workspace id> RAG_NODE_DIR=<dir with node_modules> \
//     [RAG_REVOKED_KEY=rag_...] node inspector_cli.mjs

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { BASE, KEY, MODEL, WORKSPACE_ID, NODE_MODULES, check, packageVersion, run, seconds } from "./common.mjs";

const BIN = join(NODE_MODULES, ".bin", "mcp-inspector");
const HOME = mkdtempSync(join(tmpdir(), "inspector-home-"));
process.on("exit", () => rmSync(HOME, { recursive: true, force: true }));

/** The Inspector CLI on /mcp with a key: its exit status, stdout, stderr, time. */
function inspector(key, args, { storedAuthOnly = true } = {}) {
  const argv = ["--cli", `${BASE}/mcp`, "--transport", "http", ...args, "--format", "json", "--header", `Authorization: Bearer ${key}`];
  if (storedAuthOnly) argv.push("--stored-auth-only");
  const t = performance.now();
  const r = spawnSync(BIN, argv, {
    env: { ...process.env, HOME, MCP_INSPECTOR_SECRET_STORE: "memory", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
    timeout: 120_000,
  });
  check(!r.error, () => `running ${BIN}: ${r.error}`);
  return { status: r.status, stdout: r.stdout.trim(), stderr: r.stderr.trim(), ms: performance.now() - t };
}

function json(text, what) {
  try {
    return JSON.parse(text);
  } catch {
    check(false, () => `${what} is not JSON: ${JSON.stringify(text)}`);
  }
}

async function main() {
  let r = inspector(KEY, ["--method", "tools/list", "--strict"]);
  check(r.status === 0, () => `tools/list with the key: exit ${r.status}\n${r.stderr}\n${r.stdout}`);
  check(r.stderr === "", () => `tools/list printed on stderr (a schema portability warning?):\n${r.stderr}`);
  const names = json(r.stdout, "tools/list's output").result.tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === JSON.stringify(["ask", "list_workspaces", "read_passage", "search"]), () => `tools: ${names}`);
  console.log(`tools/list (Inspector ${packageVersion("@modelcontextprotocol/inspector")}, --strict): ${names.join(", ")}, nothing on stderr (${seconds(r.ms)})`);

  r = inspector(KEY, ["--method", "tools/call", "--tool-name", "list_workspaces"]);
  check(r.status === 0, () => `tools/call list_workspaces: exit ${r.status}\n${r.stderr}\n${r.stdout}`);
  const ids = json(r.stdout, "tools/call's output").result.structuredContent.workspaces.map((w) => w.id);
  check(ids.includes(WORKSPACE_ID), () => `list_workspaces does not list ${WORKSPACE_ID}: ${ids}`);
  console.log(`tools/call list_workspaces: ${ids.length} workspace(s)`);

  const bad = [["a wrong key", "rag_0123456789ab_" + "0".repeat(64), "invalid API key"]];
  if (process.env.RAG_REVOKED_KEY) bad.push(["a revoked key", process.env.RAG_REVOKED_KEY, "revoked"]);
  for (const [what, key, reason] of bad) {
    r = inspector(key, ["--method", "tools/list"]);
    check(r.status === 3, () => `${what}: exit ${r.status}, not 3 (auth_required)\n${r.stderr}\n${r.stdout}`);
    const lastLine = r.stderr.split("\n").at(-1);
    const error = json(lastLine, `${what}: the error line`).error;
    check(error?.code === "auth_required", () => `${what}: ${lastLine}`);
    check(/unauthorized|401/i.test(error.message) && error.message.includes(reason), () => `${what}: the message does not say the key was refused ("${reason}"): ${error.message}`);
    check(!/oauth|tty/i.test(error.message), () => `${what}: reported as an OAuth problem: ${error.message}`);
    console.log(`${what}: exit 3, ${error.code}: ${error.message}`);
  }
  r = inspector(bad[0][1], ["--method", "tools/list"], { storedAuthOnly: false });
  console.log(`(a wrong key without --stored-auth-only, no TTY: exit ${r.status}, ${r.stderr.split("\n").at(-1)})`);
}

await run("inspector_cli", main);
