// Drives memctl serve's Messages API with the official Anthropic client, as Claude Code uses
// it: the thread named by the X-Claude-Code-Session-Id header, the whole conversation resent
// each turn, a tool round (a call, then its result), streamed turns through the beta
// messages, count_tokens, and another conversation on the thread, which serve refuses.
// Prints what it got as JSON on stdout.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({
  baseURL: process.env.MEMCTL_BASE_URL,
  apiKey: "client-key",
  defaultHeaders: { "X-Claude-Code-Session-Id": process.env.SESSION },
});
const model = "claude-sonnet-4-5";
const system = [{ type: "text", text: "You are a coding agent.", cache_control: { type: "ephemeral" } }];
const tools = [{ name: "Bash", description: "Run a shell command.", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } }];
const messages = [{ role: "user", content: "please run ls" }];
const out = {};

// A plain request: the model calls the tool.
const first = await client.messages.create({ model, max_tokens: 1024, system, tools, messages });
out.first = first.content;
out.usage = first.usage;
messages.push({ role: "assistant", content: first.content });
const call = first.content.find((b) => b.type === "tool_use");
messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "go.mod\nmain.go" }] });

// Streamed, through the beta messages: the tool's result answered.
const stream = client.beta.messages.stream({ model, max_tokens: 1024, system, tools, messages });
let deltas = 0;
stream.on("text", () => deltas++);
const second = await stream.finalMessage();
out.second = second.content;
out.deltas = deltas;
messages.push({ role: "assistant", content: second.content });
messages.push({ role: "user", content: "thanks" });

out.count = (await client.messages.countTokens({ model, system, tools, messages })).input_tokens;

const third = await client.beta.messages.stream({ model, max_tokens: 1024, system, tools, messages }).finalMessage();
out.third = third.content;
messages.push({ role: "assistant", content: third.content });

// Another conversation on the thread (other instructions, another first message): refused,
// raised as the SDK's error, not retried. (An edit that keeps the thread's start or its
// instructions would start a new segment instead.)
try {
  await client.messages.create({ model, max_tokens: 1024, system: "You are another agent.", tools, messages: [{ role: "user", content: "please run rm -rf /" }, { role: "assistant", content: "No." }, { role: "user", content: "x" }] });
  out.edited = "accepted";
} catch (e) {
  out.edited = { status: e.status, type: e.error?.error?.type, code: e.error?.error?.code, name: e.constructor.name };
}
out.messages = messages;
process.stdout.write(JSON.stringify(out));
