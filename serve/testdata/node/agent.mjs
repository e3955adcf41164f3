// An agent with a tool, driven through memctl serve with the official openai client: it keeps
// its own history and resends all of it every request; when the model calls read_log it runs
// the tool (a long log) and sends the result. Input: the environment (MEMCTL_BASE_URL,
// MEMCTL_TOKEN, TURNS); output, on stdout, one JSON object: the final conversation.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.MEMCTL_BASE_URL, apiKey: process.env.MEMCTL_TOKEN, maxRetries: 0 });
const turns = Number(process.env.TURNS || "40");
const tools = [{ type: "function", function: { name: "read_log", description: "Read a build log", parameters: { type: "object", properties: { step: { type: "integer" } } } } }];
const messages = [{ role: "system", content: "You are a build assistant. Read the logs you need, then answer briefly." }];

for (let i = 1; i <= turns; i++) {
  messages.push({ role: "user", content: `Step ${i}: the job on runner-${i} failed again after the cache was cleared; what is wrong now?` });
  for (;;) {
    const completion = await client.chat.completions.create({ model: "m", messages, tools });
    const reply = completion.choices[0].message;
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    for (const call of reply.tool_calls) {
      const { step } = JSON.parse(call.function.arguments);
      const lines = Array.from({ length: 12 }, (_, k) => `[runner-${step}] ${k}: layer sha256:${(step * 7919 + k).toString(16)} cache miss, pulling`);
      messages.push({ role: "tool", tool_call_id: call.id, content: lines.join("\n") });
    }
  }
}
console.log(JSON.stringify({ messages }));
