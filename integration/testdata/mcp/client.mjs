// An MCP client for integration/mcp_test.go, built on the official
// TypeScript SDK (@modelcontextprotocol/sdk): it starts $MCP_COMMAND (a
// JSON argv: sbx mcp ...) on stdio, or connects to $MCP_SOCKET (sbx mcp
// --listen PATH) or to $MCP_URL (sbx mcp --listen 127.0.0.1:PORT, with the
// bearer token $MCP_TOKEN) with the streamable HTTP transport, lists the tools, makes the calls of
// $MCP_CALLS (a JSON list of {name, arguments, cancel_after_ms?}) in order,
// and prints one JSON object: {tools, results, elicitations}. With
// $MCP_ELICIT (a JSON list of answers, one per elicitation in order:
// {"action": "accept", "content": {...}} or {"action": "decline"}) it
// declares the elicitation capability and answers so; without it the client
// cannot be asked. With $MCP_ROOTS (a JSON list of file:// URIs) it offers
// them as its MCP roots; a call with {roots: [...]} first replaces them and
// sends notifications/roots/list_changed. The SDK checks every message against its own schemas,
// the tools' structuredContent against their output schemas.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { request } from "node:http";
import { Readable } from "node:stream";
import { ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = JSON.parse(process.env.MCP_COMMAND ?? "[]");
const calls = JSON.parse(process.env.MCP_CALLS ?? "[]");
const answers = process.env.MCP_ELICIT ? JSON.parse(process.env.MCP_ELICIT) : null;

let roots = process.env.MCP_ROOTS ? JSON.parse(process.env.MCP_ROOTS) : null;
const capabilities = {};
if (answers) capabilities.elicitation = { form: {} };
if (roots) capabilities.roots = { listChanged: true };
const client = new Client({ name: "sbx-mcp-test", version: "1.0.0" }, { capabilities });
if (roots) {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: roots.map((uri) => ({ uri })) }));
}
const elicitations = [];
if (answers) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push(req.params);
    return answers.shift() ?? { action: "decline" };
  });
}
// unixFetch is fetch over the unix socket $MCP_SOCKET (Node's fetch has no
// socket path of its own): the streamable HTTP transport's requests, their
// responses' bodies streamed (server-sent events).
const socketPath = process.env.MCP_SOCKET;
function unixFetch(url, init = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
    const req = request({ socketPath, path: u.pathname + u.search, method: init.method ?? "GET", headers }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) for (const one of [].concat(v)) h.append(k, one);
      const empty = [101, 204, 205, 304].includes(res.statusCode);
      if (empty) res.resume();
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, headers: h }));
    });
    req.on("error", reject);
    init.signal?.addEventListener("abort", () => req.destroy(new Error("aborted")));
    if (init.body) req.write(init.body);
    req.end();
  });
}
const transport = process.env.MCP_URL
  ? new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
    })
  : socketPath
  ? new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), { fetch: unixFetch })
  : new StdioClientTransport({ command: argv[0], args: argv.slice(1), stderr: "inherit" });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const results = [];
for (const c of calls) {
  const ac = new AbortController();
  let timer;
  if (c.cancel_after_ms) timer = setTimeout(() => ac.abort("cancelled by the test"), c.cancel_after_ms);
  if (c.roots) {
    roots = c.roots;
    await client.sendRootsListChanged();
  }
  const started = Date.now();
  try {
    const r = await client.callTool({ name: c.name, arguments: c.arguments }, undefined, { signal: ac.signal, timeout: 120000 });
    results.push({ result: r, ms: Date.now() - started });
  } catch (e) {
    results.push({ error: String(e), ms: Date.now() - started });
  }
  clearTimeout(timer);
}
// Give a cancelled call's kill time to land before the server goes away.
await new Promise((r) => setTimeout(r, 200));
await client.close();
process.stdout.write(JSON.stringify({ tools, results, elicitations }) + "\n");
