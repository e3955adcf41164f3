// Drives memctl serve with the official openai client, as an agent would: it keeps its own
// history and resends all of it every turn; the last turn is streamed. Its input is the
// environment (MEMCTL_BASE_URL, MEMCTL_TOKEN, TURNS); its output, on stdout, is one JSON
// object: the final conversation, the streamed reply and the number of chunks it came in.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.MEMCTL_BASE_URL, apiKey: process.env.MEMCTL_TOKEN, maxRetries: 0 });
const turns = Number(process.env.TURNS || "8");
const messages = [{ role: "system", content: "You are a build assistant. Keep answers short." }];

for (let i = 1; i <= turns; i++) {
  messages.push({
    role: "user",
    content: `Step ${i}: the job on runner-${i} failed; the log says ${"cache miss on layer; ".repeat(10)}what next?`,
  });
  if (i < turns) {
    const completion = await client.chat.completions.create({ model: "gpt-4o", messages });
    messages.push(completion.choices[0].message);
    continue;
  }
  const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
  let text = "";
  let chunks = 0;
  let finish = null;
  for await (const chunk of stream) {
    chunks++;
    const choice = chunk.choices[0];
    if (choice) {
      text += choice.delta?.content ?? "";
      finish = choice.finish_reason ?? finish;
    }
  }
  messages.push({ role: "assistant", content: text });
  console.log(JSON.stringify({ messages, streamed: text, chunks, finish }));
}
