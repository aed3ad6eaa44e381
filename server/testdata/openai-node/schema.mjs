// Structured output through the official openai client: response_format
// json_schema (whole and streamed) and json_object come back as JSON that
// parses and validates against the schema, whatever the sampling; an
// unsupported schema feature is a BadRequestError naming it.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.SHADE_URL + "/v1", apiKey: "test-key", maxRetries: 0 });
const id = (await client.models.list()).data[0].id;

const schema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 24 },
    age: { type: "integer" },
    mood: { enum: ["happy", "sad"] },
    friends: { type: "array", items: { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false }, maxItems: 2 },
  },
  required: ["name", "age", "mood", "friends"],
  additionalProperties: false,
};

// validate checks v against the subset of JSON schema used above.
function validate(s, v, at = "#") {
  if (s.enum) assert.ok(s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)), `${at}: ${JSON.stringify(v)} not in enum`);
  switch (s.type) {
    case "object":
      assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${at}: not an object`);
      for (const r of s.required ?? []) assert.ok(r in v, `${at}: missing ${r}`);
      for (const [k, x] of Object.entries(v)) {
        if (s.properties?.[k]) validate(s.properties[k], x, `${at}/${k}`);
        else assert.notEqual(s.additionalProperties, false, `${at}: unexpected property ${k}`);
      }
      break;
    case "array":
      assert.ok(Array.isArray(v), `${at}: not an array`);
      if (s.maxItems !== undefined) assert.ok(v.length <= s.maxItems, `${at}: too many items`);
      v.forEach((x, i) => validate(s.items, x, `${at}/${i}`));
      break;
    case "string":
      assert.equal(typeof v, "string", `${at}: not a string`);
      if (s.maxLength !== undefined) assert.ok([...v].length <= s.maxLength, `${at}: too long`);
      break;
    case "integer":
      assert.ok(Number.isInteger(v), `${at}: not an integer`);
      break;
  }
}

const response_format = { type: "json_schema", json_schema: { name: "person", schema, strict: true } };
for (const [temperature, max_tokens] of [[0, 80], [1.3, 50], [1.3, 300]]) {
  const r = await client.chat.completions.create({
    model: id, messages: [{ role: "user", content: "Describe a person." }], response_format, temperature, max_tokens, seed: 5,
  });
  const text = r.choices[0].message.content;
  validate(schema, JSON.parse(text));
  assert.equal(r.choices[0].finish_reason, "stop"); // complete, also when the budget closed it
  console.log("ok json_schema", temperature, max_tokens, r.choices[0].finish_reason, text);
}

const stream = await client.chat.completions.create({
  model: id, messages: [{ role: "user", content: "Describe a person." }], response_format, temperature: 1, max_tokens: 120, seed: 9, stream: true,
});
let streamed = "";
for await (const chunk of stream) for (const c of chunk.choices) streamed += c.delta.content ?? "";
validate(schema, JSON.parse(streamed));
console.log("ok json_schema stream", streamed);

const obj = await client.chat.completions.create({
  model: id, messages: [{ role: "user", content: "JSON please." }], response_format: { type: "json_object" }, temperature: 1, max_tokens: 60, seed: 3,
});
const parsed = JSON.parse(obj.choices[0].message.content);
assert.ok(parsed !== null && typeof parsed === "object" && !Array.isArray(parsed));
console.log("ok json_object", obj.choices[0].message.content);

await assert.rejects(
  client.chat.completions.create({
    model: id, messages: [{ role: "user", content: "x" }],
    response_format: { type: "json_schema", json_schema: { name: "p", schema: { type: "string", pattern: "^a+$" } } },
  }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "response_format.json_schema.schema" && /"pattern"/.test(e.message),
);
console.log("ok unsupported feature is a 400");

// A max_tokens too small for the schema's shortest output is refused.
await assert.rejects(
  client.chat.completions.create({ model: id, messages: [{ role: "user", content: "x" }], response_format, max_tokens: 10 }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "max_tokens",
);
console.log("ok max_tokens below the shortest output is a 400");
