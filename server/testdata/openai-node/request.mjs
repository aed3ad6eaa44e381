// The rest of the request, through the official openai client: logprobs
// (chat and legacy completions, whole and streamed), stop sequences with
// exact usage, a model name the server does not have answered with its
// own, and a field it does not implement refused with a 400 naming it.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.SHADE_URL + "/v1", apiKey: "test-key", maxRetries: 0 });
const id = (await client.models.list()).data[0].id;
const messages = [{ role: "user", content: "Tell me a story." }];

// Clients come configured with some OpenAI model: the server's one answers.
const any = await client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 4, temperature: 0 });
assert.equal(any.model, id);
console.log("ok any model name answered by", any.model);

// Chat logprobs: one entry per completion token, greedy picks the top one.
const lp = await client.chat.completions.create({
  model: "gpt-4o-mini", messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3,
});
const content = lp.choices[0].logprobs.content;
assert.equal(content.length, lp.usage.completion_tokens);
for (const e of content) {
  assert.ok(e.logprob <= 0 && Array.isArray(e.bytes) && e.top_logprobs.length === 3);
  assert.equal(e.token, e.top_logprobs[0].token);
  assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-6);
}
const text = Buffer.from(content.flatMap((e) => e.bytes)).toString("utf8");
assert.ok(text.endsWith(lp.choices[0].message.content) && text.length - lp.choices[0].message.content.length <= 1);
console.log("ok chat logprobs", content.length, "tokens, first", JSON.stringify(content[0].token), content[0].logprob.toFixed(3));

// Streamed: the same tokens and log-probabilities, chunk by chunk.
const st = await client.chat.completions.create({
  model: id, messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3, stream: true,
});
const streamed = [];
for await (const chunk of st) for (const c of chunk.choices) streamed.push(...(c.logprobs?.content ?? []));
assert.deepEqual(streamed.map((e) => [e.token, e.logprob]), content.map((e) => [e.token, e.logprob]));
console.log("ok chat logprobs streamed");

// Legacy completions: parallel lists.
const cl = await client.completions.create({ model: "davinci-002", prompt: "Once upon a time", max_tokens: 8, temperature: 0, logprobs: 2 });
const l = cl.choices[0].logprobs;
assert.equal(l.tokens.length, cl.usage.completion_tokens);
assert.equal(l.token_logprobs.length, l.tokens.length);
assert.equal(l.top_logprobs.length, l.tokens.length);
assert.equal(l.text_offset.length, l.tokens.length);
console.log("ok completion logprobs", JSON.stringify(l.tokens));

// Stops: the same request five times, the same text and usage, and the
// usage is the returned text's tokens (as logprobs count them).
const full = await client.completions.create({ model: id, prompt: "Once upon a time", max_tokens: 60, temperature: 0, logprobs: 0 });
const cut = full.choices[0].text.indexOf(".");
assert.ok(cut > 0, "the reference text has a period");
const want = full.choices[0].logprobs.text_offset.filter((o) => o < cut).length;
for (let run = 0; run < 5; run++) {
  const r = await client.completions.create({ model: id, prompt: "Once upon a time", max_tokens: 60, temperature: 0, stop: ["."] });
  assert.equal(r.choices[0].text, full.choices[0].text.slice(0, cut));
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.equal(r.usage.completion_tokens, want);
  const s = await client.completions.create({
    model: id, prompt: "Once upon a time", max_tokens: 60, temperature: 0, stop: ["."], stream: true, stream_options: { include_usage: true },
  });
  let stext = "", susage = null;
  for await (const chunk of s) {
    if (chunk.usage) susage = chunk.usage;
    stext += chunk.choices[0]?.text ?? "";
  }
  assert.equal(stext, r.choices[0].text);
  assert.equal(susage.completion_tokens, want);
}
console.log("ok stop: five runs of", want, "tokens,", JSON.stringify(full.choices[0].text.slice(0, cut)));

// Sampling fields are accepted and range-checked (the server's tests show
// them honoured; the client has no tokenizer to pick ids with).
const pen = await client.chat.completions.create({
  model: id, messages, max_tokens: 4, temperature: 0, presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { "5": -100 },
  top_k: 20, min_p: 0.05, repeat_penalty: 1.1,
});
assert.equal(pen.object, "chat.completion");
await assert.rejects(client.chat.completions.create({ model: id, messages, max_tokens: 1, logit_bias: { "99999999": 1 } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "logit_bias");
await assert.rejects(client.chat.completions.create({ model: id, messages, max_tokens: 1, presence_penalty: 3 }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "presence_penalty");
console.log("ok sampling fields");

// A field the server does not implement is refused, naming it.
await assert.rejects(client.chat.completions.create({ model: id, messages, max_tokens: 2, modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "audio" && /audio/.test(e.message));
await assert.rejects(client.chat.completions.create({ model: id, messages, max_tokens: 2, n: 2 }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "n");
await assert.rejects(client.chat.completions.create({ model: id, messages, max_tokens: 2, prediction: { type: "content", content: "x" } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "prediction");
console.log("ok unsupported fields refused");
