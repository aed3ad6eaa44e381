// Talks to a shade server with the official openai client, streaming and
// not. The server's URL is in SHADE_URL; the test prints "ok" lines and
// exits non-zero on the first failure.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.SHADE_URL + "/v1", apiKey: "test-key", maxRetries: 0 });

const models = await client.models.list();
const id = models.data[0].id;
assert.equal(models.data.length, 1);
console.log("ok models", id);

const chat = await client.chat.completions.create({
  model: id, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Tell me a story." }],
  max_tokens: 24, temperature: 0, seed: 7,
});
const whole = chat.choices[0].message.content;
assert.equal(chat.object, "chat.completion");
assert.equal(chat.choices[0].message.role, "assistant");
assert.ok(whole.length > 0);
assert.ok(chat.usage.completion_tokens > 0 && chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens);
console.log("ok chat", JSON.stringify(whole));

const stream = await client.chat.completions.create({
  model: id, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Tell me a story." }],
  max_tokens: 24, temperature: 0, seed: 7, stream: true, stream_options: { include_usage: true },
});
let streamed = "", finish = null, usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed += c.delta.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
assert.equal(streamed, whole);
assert.equal(finish, chat.choices[0].finish_reason);
assert.equal(usage.completion_tokens, chat.usage.completion_tokens);
console.log("ok chat stream", finish);

const cmpl = await client.completions.create({ model: id, prompt: "Once upon a time", max_tokens: 16, temperature: 0, stop: ["zzz"] });
assert.equal(cmpl.object, "text_completion");
const cstream = await client.completions.create({ model: id, prompt: "Once upon a time", max_tokens: 16, temperature: 0, stream: true });
let ctext = "";
for await (const chunk of cstream) ctext += chunk.choices[0]?.text ?? "";
assert.equal(ctext, cmpl.choices[0].text);
console.log("ok completions", JSON.stringify(ctext));

// Errors arrive as the client's typed errors.
await assert.rejects(client.models.retrieve("no-such-model"),
  (e) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found");
await assert.rejects(client.chat.completions.create({ model: id, messages: [] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "messages");
const bad = new OpenAI({ baseURL: process.env.SHADE_URL + "/v1", apiKey: "wrong", maxRetries: 0 });
await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
console.log("ok errors");

// Cancellation mid-stream through an AbortController.
const ac = new AbortController();
const long = await client.completions.create({ model: id, prompt: "Once", max_tokens: 1000, stream: true, ignore_eos: true }, { signal: ac.signal });
let n = 0;
try {
  for await (const _ of long) { if (++n === 3) ac.abort(); }
} catch (e) {
  assert.ok(e.name === "AbortError" || e instanceof OpenAI.APIUserAbortError, String(e));
}
console.log("ok abort after", n, "chunks");
