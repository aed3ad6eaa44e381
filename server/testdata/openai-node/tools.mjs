// Tool calls through the official openai client against stories260K (a
// model that never saw a tool): a forced choice (required, or a named
// function) comes back as tool_calls whose arguments parse and validate
// against the function's schema, whole and streamed (the client's
// delta.tool_calls reassembled give the same calls); the result goes back
// in a role "tool" message after the assistant's tool_calls message with
// null content, and the model answers; bad tool requests are
// BadRequestErrors naming the field.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.SHADE_URL + "/v1", apiKey: "test-key", maxRetries: 0 });
const id = (await client.models.list()).data[0].id;

const weather = {
  type: "object",
  properties: { city: { type: "string", maxLength: 16 }, unit: { enum: ["c", "f"] }, days: { type: "integer" } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const tools = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city.", parameters: weather } },
  { type: "function", function: { name: "get_time", description: "The time in a zone.", parameters: { type: "object", properties: { zone: { type: "string", maxLength: 8 } }, required: ["zone"], additionalProperties: false } } },
];
const schemas = Object.fromEntries(tools.map((t) => [t.function.name, t.function.parameters]));

function validate(s, v, at = "#") {
  if (s.enum) assert.ok(s.enum.includes(v), `${at}: ${JSON.stringify(v)} not in enum`);
  switch (s.type) {
    case "object":
      assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${at}: not an object`);
      for (const r of s.required ?? []) assert.ok(r in v, `${at}: missing ${r}`);
      for (const [k, x] of Object.entries(v)) {
        assert.ok(s.properties[k], `${at}: unexpected property ${k}`);
        validate(s.properties[k], x, `${at}/${k}`);
      }
      break;
    case "string":
      assert.equal(typeof v, "string", `${at}: not a string`);
      assert.ok([...v].length <= s.maxLength, `${at}: too long`);
      break;
    case "integer":
      assert.ok(Number.isInteger(v), `${at}: not an integer`);
      break;
  }
}

function check(calls, onlyName) {
  assert.ok(calls.length > 0, "no tool calls");
  for (const c of calls) {
    assert.equal(c.type, "function");
    assert.ok(c.id.startsWith("call_"), c.id);
    if (onlyName) assert.equal(c.function.name, onlyName);
    validate(schemas[c.function.name], JSON.parse(c.function.arguments));
  }
}

const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const choices = [["required", undefined, 0], [{ type: "function", function: { name: "get_weather" } }, "get_weather", 1.2]];
for (const [tool_choice, onlyName, temperature] of choices) {
  const r = await client.chat.completions.create({ model: id, messages, tools, tool_choice, temperature, seed: 11, max_tokens: 100 });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.equal(m.content, null);
  check(m.tool_calls, onlyName);
  console.log("ok tool_calls", JSON.stringify(tool_choice), temperature, JSON.stringify(m.tool_calls.map((c) => [c.function.name, c.function.arguments])));
}

// Streamed: delta.tool_calls[{index, id, type, function: {name, arguments}}],
// the arguments in pieces; greedy, the same calls as whole.
const req = { model: id, messages, tools, tool_choice: "required", parallel_tool_calls: true, temperature: 0, seed: 11, max_tokens: 100 };
const whole = (await client.chat.completions.create(req)).choices[0].message.tool_calls;
const stream = await client.chat.completions.create({ ...req, stream: true });
const calls = [];
let finish = null, pieces = 0;
for await (const chunk of stream) {
  for (const c of chunk.choices) {
    for (const d of c.delta.tool_calls ?? []) {
      if (d.id) calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: "" } };
      calls[d.index].function.arguments += d.function.arguments ?? "";
      pieces++;
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
}
assert.equal(finish, "tool_calls");
check(calls);
assert.deepEqual(calls.map((c) => c.function), whole.map((c) => c.function));
assert.ok(pieces > calls.length, `arguments in one piece (${pieces} deltas)`);
console.log("ok tool_calls stream", calls.length, "calls in", pieces, "deltas");

// The follow-up turn: the assistant's calls (content null) and each
// call's result as a role "tool" message.
const followUp = await client.chat.completions.create({
  model: id, tools, temperature: 0, max_tokens: 12,
  messages: [...messages, { role: "assistant", content: null, tool_calls: whole },
    ...whole.map((c) => ({ role: "tool", tool_call_id: c.id, content: JSON.stringify({ sky: "sunny", temp: 21 }) }))],
});
assert.equal(followUp.choices[0].message.role, "assistant");
assert.ok(followUp.usage.completion_tokens > 0);
console.log("ok tool follow-up", JSON.stringify(followUp.choices[0].message.content));

await assert.rejects(client.chat.completions.create({ model: id, messages, tools, tool_choice: { type: "function", function: { name: "nope" } } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "tool_choice");
await assert.rejects(client.chat.completions.create({ model: id, messages: [...messages, { role: "tool", content: "x" }] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "messages[1].tool_call_id");
console.log("ok tool errors");
