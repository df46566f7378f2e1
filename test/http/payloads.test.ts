import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_PAYLOAD_DEPTH } from "../../packages/core/src/core/defaults.js";
import { type ApiTest, call, createApiTest, expectProblem, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

/** POST raw JSON text (so the test controls every byte) as any.value's `value`. */
const postRaw = (valueJson: string | Buffer) =>
  call(test.app, {
    method: "POST",
    url: "/v1/jobs",
    key: test.keys.acme,
    headers: { "content-type": "application/json" },
    body: Buffer.isBuffer(valueJson)
      ? Buffer.concat([Buffer.from('{"kind":"any.value","payload":{"value":'), valueJson, Buffer.from("}}")])
      : `{"kind":"any.value","payload":{"value":${valueJson}}}`,
  });

/**
 * Created, stored and read back unchanged: the value in the answer, in the
 * database and on GET. Equal as JSON values: jsonb keeps values exactly but
 * not the order of object keys.
 */
async function expectRoundTrip(valueJson: string, expected: unknown = JSON.parse(valueJson)): Promise<void> {
  const created = await postRaw(valueJson);
  expect(created.statusCode, created.body).toBe(201);
  expect(created.json.payload.value).toEqual(expected);
  const [stored] = await rows(test, "SELECT payload FROM {{schema}}.jobs WHERE id = $1", [created.json.id]);
  expect(stored.payload.value).toEqual(expected);
  const read = await call(test.app, { url: `/v1/jobs/${created.json.id}`, key: test.keys.acme });
  expect(read.json.payload.value).toEqual(expected);
}

describe("payload edge cases", () => {
  it("refuses NUL characters with 422 naming the path (PostgreSQL cannot store them)", async () => {
    const problem = expectProblem(await postRaw('{"name": "a\\u0000b"}'), 422, "VALIDATION");
    expect(problem.detail).toBe("payload.value.name contains a NUL character (\\u0000), which PostgreSQL cannot store");
    expect(problem.errors[0].path).toBe("payload.value.name");
    expectProblem(await postRaw('{"a\\u0000": 1}'), 422, "VALIDATION");
  });

  it("refuses lone surrogates with 422, and round-trips paired ones (astral characters) exactly", async () => {
    expect(expectProblem(await postRaw('"\\ud800"'), 422, "VALIDATION").detail).toMatch(/payload\.value contains a lone UTF-16 surrogate/);
    expectProblem(await postRaw('["ok", "\\udc00x"]'), 422, "VALIDATION");
    await expectRoundTrip('"\\ud83d\\ude80 rocket, 𝄞 clef, עברית, 中文, e\\u0301"');
  });

  it("refuses bytes that are not UTF-8 with 400 instead of swapping in replacement characters", async () => {
    const problem = expectProblem(await postRaw(Buffer.from([0x22, 0xc3, 0x28, 0x22])), 400, "MALFORMED_REQUEST");
    expect(problem.detail).toBe("request body is not valid UTF-8");
  });

  it(`round-trips nesting up to ${MAX_PAYLOAD_DEPTH} levels and refuses deeper with 422 naming where`, async () => {
    // payload.value is at depth 1 of the payload; each array adds one more.
    const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
    await expectRoundTrip(nested(MAX_PAYLOAD_DEPTH - 1));
    const problem = expectProblem(await postRaw(nested(MAX_PAYLOAD_DEPTH + 5)), 422, "VALIDATION");
    expect(problem.detail).toMatch(/^payload\.value(\.0)+ nests deeper than \d+ levels$/);
    const absurd = expectProblem(await postRaw(nested(100_000)), 422, "VALIDATION");
    expect(absurd.detail).toMatch(/^request body nests too deep for any payload/);
    // Both refusals state the one documented limit, whichever of them answers.
    const levels = (detail: string) => Number(/(\d+) levels\)?$/.exec(detail)?.[1]);
    expect(levels(problem.detail)).toBe(MAX_PAYLOAD_DEPTH);
    expect(levels(absurd.detail)).toBe(MAX_PAYLOAD_DEPTH);
  });

  it("round-trips numbers a 64-bit float holds and refuses the rest with 422 naming the number", async () => {
    await expectRoundTrip("[0, -0.5, 1.5e300, 5e-324, 9007199254740991, -9007199254740991, 0.1, 123456.789, 1E3]", [
      0, -0.5, 1.5e300, 5e-324, 9007199254740991, -9007199254740991, 0.1, 123456.789, 1000,
    ]);
    const tooPrecise = expectProblem(await postRaw("12345678901234567890"), 422, "VALIDATION");
    expect(tooPrecise.detail).toBe(
      "the number 12345678901234567890 has more digits than a 64-bit float keeps (it would be stored as 12345678901234567000); send it as a string",
    );
    expectProblem(await postRaw("9007199254740993"), 422, "VALIDATION");
    expectProblem(await postRaw("0.10000000000000000555"), 422, "VALIDATION");
    const tooBig = expectProblem(await postRaw("1e400"), 422, "VALIDATION");
    expect(tooBig.detail).toBe("the number 1e400 is outside the range of a 64-bit float; send it as a string");
    expectProblem(await postRaw("-1e400"), 422, "VALIDATION");
    await expectRoundTrip('"12345678901234567890"');
  });

  it("refuses __proto__ keys (however escaped) with 422, and round-trips other prototype-ish keys", async () => {
    for (const json of ['{"__proto__": {"admin": true}}', '{"a": [{"\\u005f_proto__": 1}]}', '{"__pro\\u0074o__": null}']) {
      expect(expectProblem(await postRaw(json), 422, "VALIDATION").detail, json).toMatch(/"__proto__" is not accepted/);
    }
    await expectRoundTrip('{"constructor": {"prototype": {"x": 1}}, "prototype": 1, "toString": "s", "hasOwnProperty": 2, "text": "__proto__"}');
    expect(({} as { admin?: boolean }).admin).toBeUndefined(); // nothing leaked into Object.prototype
  });

  it("round-trips awkward but valid JSON exactly: empty containers, null, escapes, long strings, many keys", async () => {
    await expectRoundTrip("null");
    await expectRoundTrip("{}");
    await expectRoundTrip('[[], {}, "", false, true, null]');
    await expectRoundTrip('"quote \\" backslash \\\\ slash \\/ tab \\t newline \\n control \\u0001 del \\u007f"');
    await expectRoundTrip(JSON.stringify("x".repeat(200_000)));
    await expectRoundTrip(JSON.stringify(Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${i}`, i]))));
  });

  it("keeps a key's last value when an object repeats it (as JSON.parse does), visibly in the answer", async () => {
    const created = await postRaw('{"a": 1, "a": 2}');
    expect(created.statusCode).toBe(201);
    expect(created.json.payload.value).toEqual({ a: 2 });
  });
});
