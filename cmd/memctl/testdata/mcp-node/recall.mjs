// Drives memctl's MCP server with the official TypeScript SDK client: over stdio (memctl mcp,
// started as MEMCTL_CMD with the JSON array MEMCTL_ARGS) and over streamable HTTP (MCP_URL,
// memctl serve's /mcp, with the bearer token MEMCTL_TOKEN). On THREAD, a compacted recorded
// conversation: it finds a booking id whose original messages compaction moved out of the
// active context, reads them, pins one, asks for a compaction over HTTP and searches again.
// It prints one JSON object for the Go test to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const thread = process.env.THREAD;

// data returns a tool call's structured answer, or throws its error text.
function data(res) {
  if (res.isError) throw new Error(res.content.map((c) => c.text).join(" "));
  return res.structuredContent;
}

async function call(client, name, args) {
  return data(await client.callTool({ name, arguments: args }));
}

async function tools(client) {
  return (await client.listTools()).tools.map((t) => t.name).sort();
}

const stdio = new Client({ name: "memctl-node-test", version: "1.0.0" });
await stdio.connect(new StdioClientTransport({
  command: process.env.MEMCTL_CMD,
  args: JSON.parse(process.env.MEMCTL_ARGS),
  env: process.env,
  stderr: "inherit",
}));
const stdioTools = await tools(stdio);

// The booking ids of the messages the applied compaction covered, read page by page.
const applied = (await call(stdio, "memory_compactions", { thread })).compactions.find((c) => c.status === "applied");
const ids = new Set();
for (let from = applied.from_seq; from && from <= applied.to_seq;) {
  const page = await call(stdio, "memory_read", { thread, from_seq: from, to_seq: applied.to_seq });
  for (const m of page.messages) {
    const text = m.content + " " + (m.tool_calls ?? []).map((c) => c.arguments).join(" ");
    for (const match of text.matchAll(/"reservation_id": ?"([A-Z0-9]{6})"/g)) ids.add(match[1]);
  }
  from = page.truncated ? page.next_seq : 0;
}

// The first of them whose tool result is no longer in the active context.
let id, hit;
for (const candidate of ids) {
  const hits = (await call(stdio, "memory_search", { thread, query: candidate })).hits;
  hit = hits.find((h) => !h.compaction_id && h.role === "tool" && !h.in_active_context);
  if (hit) {
    id = candidate;
    break;
  }
}
if (!id) throw new Error(`no booking id of ${[...ids]} left the active context`);
const read = await call(stdio, "memory_read", { thread, from_seq: hit.seq - 1, to_seq: hit.seq });
const pin = await call(stdio, "memory_pin", { thread, seq: hit.seq });
await stdio.close();

const http = new Client({ name: "memctl-node-test", version: "1.0.0" });
await http.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.MEMCTL_TOKEN}` } },
}));
const httpTools = await tools(http);
const compact = await call(http, "memory_compact", { thread, reason: "downgrades done" });
const after = (await call(http, "memory_search", { thread, query: id })).hits;
await http.close();

console.log(JSON.stringify({ stdioTools, httpTools, ids: [...ids], id, seq: hit.seq, read: read.messages, pin, compact, after }));
