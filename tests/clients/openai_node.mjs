// The Node `openai` package (the official SDK) against rag-engine's
// OpenAI-compatible endpoints, as docs/integrations.md connects it: a base
// URL ending in /v1, an API key, a workspace as the model. Asks once and
// once streamed; what a chat front-end shows is `content`, so each reply's
// content must end with its sources list: every [n] marker of the answer
// listed, every listed quote the raw text at its link's span (whitespace
// runs as one space), the list the same as the structured `citations`;
// streamed, the list comes whole as the last content piece. Prints what it
// measured.
//
//   RAG_BASE=... RAG_API_KEY=rag_... RAG_MODEL=<workspace id or name> RAG_NODE_DIR=<dir with node_modules> node openai_node.mjs

import { BASE, KEY, MODEL, QUESTION, STREAMED, check, checkCitations, checkSources, nodeRequire, packageVersion, run, seconds } from "./common.mjs";

const { OpenAI, AuthenticationError } = nodeRequire("openai");

const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 600_000, maxRetries: 0 });

async function main() {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  check(models.some((m) => m.id === MODEL || m.workspace_id === MODEL), () => `/v1/models does not list ${MODEL}: ${JSON.stringify(models)}`);
  console.log(`models (openai ${packageVersion("openai")}): ${models.map((m) => m.id).join(", ")}`);

  let t = performance.now();
  const reply = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: QUESTION }] });
  const whole = performance.now() - t;
  const message = reply.choices[0].message;
  check(reply.object === "chat.completion" && reply.choices[0].finish_reason === "stop", () => `not a finished chat.completion: ${JSON.stringify(reply)}`);
  const split = await checkSources(message.content, message.citations);
  const cited = await checkCitations(split.answer, message.citations, message.rag.workspace_id);
  console.log(
    `question: ${seconds(whole)}, ${cited} citation(s), ${split.entries.length} listed under ${split.heading ?? "(no list)"}, each quoting the raw text: ${JSON.stringify(message.content.slice(0, 120))}`,
  );

  t = performance.now();
  let firstChunk = null;
  let firstContent = null;
  const pieces = [];
  let citations = null;
  let rag = null;
  let usage = null;
  const stream = await client.chat.completions.create({
    model: MODEL,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: STREAMED }],
  });
  for await (const chunk of stream) {
    firstChunk ??= performance.now() - t;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (choice.delta?.content) {
      firstContent ??= performance.now() - t;
      pieces.push(choice.delta.content);
    }
    if (choice.finish_reason === "stop") ({ citations, rag } = choice.delta);
  }
  const streamed = performance.now() - t;
  const text = pieces.join("");
  check(text && rag && usage, () => `the stream missed its text, rag or usage: ${JSON.stringify({ text, rag, usage })}`);
  const streamedSplit = await checkSources(text, citations);
  const streamedCited = await checkCitations(streamedSplit.answer, citations, rag.workspace_id);
  if (streamedSplit.heading) {
    check(pieces.at(-1).endsWith(streamedSplit.block), () => `the sources list did not come whole as the last content piece: ${JSON.stringify(pieces.at(-1))}`);
  }
  console.log(
    `streamed: first chunk ${seconds(firstChunk)}, first content ${seconds(firstContent)}, whole ${seconds(streamed)}, ${pieces.length} content piece(s), ` +
      `${streamedCited} citation(s) listed in the last piece, ${usage.total_tokens} tokens: ${JSON.stringify(text.slice(0, 120))}`,
  );
  check(cited + streamedCited > 0, "no answer cited anything");

  const refused = await new OpenAI({ baseURL: `${BASE}/v1`, apiKey: "rag_wrong", maxRetries: 0 }).models.list().then(
    () => null,
    (e) => e,
  );
  check(refused instanceof AuthenticationError && refused.status === 401, () => `a wrong key: ${refused}`);
  console.log(`a wrong key: ${refused.message}`);
}

await run("openai_node", main);
