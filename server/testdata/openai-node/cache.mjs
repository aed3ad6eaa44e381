// The prefix cache through the official openai client: a conversation's
// second turn reports, in usage.prompt_tokens_details.cached_tokens, that
// the first turn's prompt came from the cache, whole and streamed. The
// server's URL is in SHADE_URL.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.SHADE_URL + "/v1", apiKey: "test-key", maxRetries: 0 });
const id = (await client.models.list()).data[0].id;

const messages = [
  { role: "system", content: "You are a storyteller for the cache test." },
  { role: "user", content: "Tell me a story about a red kite and a windy hill." },
];
const first = await client.chat.completions.create({ model: id, messages, max_tokens: 20, temperature: 0 });
assert.equal(typeof first.usage.prompt_tokens_details.cached_tokens, "number");
assert.ok(first.usage.prompt_tokens_details.cached_tokens < first.usage.prompt_tokens);
console.log("ok first turn", first.usage.prompt_tokens, "prompt tokens,", first.usage.prompt_tokens_details.cached_tokens, "cached");

messages.push(first.choices[0].message, { role: "user", content: "What did the kite see from up there?" });
const second = await client.chat.completions.create({ model: id, messages, max_tokens: 20, temperature: 0 });
const cached = second.usage.prompt_tokens_details.cached_tokens;
assert.ok(cached >= first.usage.prompt_tokens, `second turn: ${cached} cached, the first turn's prompt was ${first.usage.prompt_tokens}`);
assert.ok(cached < second.usage.prompt_tokens);
console.log("ok second turn", second.usage.prompt_tokens, "prompt tokens,", cached, "cached");

// The same request again, streamed: its whole prompt but the last token is cached.
const stream = await client.chat.completions.create({
  model: id, messages, max_tokens: 20, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let text = "", usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) text += c.delta.content ?? "";
}
assert.equal(text, second.choices[0].message.content);
assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);
console.log("ok streamed repeat", usage.prompt_tokens_details.cached_tokens, "cached");

// The completions endpoint reports it too.
const prompt = "Once upon a time, in a village by the sea, there lived an old fisherman";
const c1 = await client.completions.create({ model: id, prompt, max_tokens: 8, temperature: 0 });
const c2 = await client.completions.create({ model: id, prompt: prompt + c1.choices[0].text + " and", max_tokens: 8, temperature: 0 });
assert.ok(c2.usage.prompt_tokens_details.cached_tokens >= c1.usage.prompt_tokens - 1);
console.log("ok completions", c2.usage.prompt_tokens_details.cached_tokens, "cached");
