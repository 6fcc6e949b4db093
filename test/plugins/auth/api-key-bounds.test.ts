/**
 * The bounds of an API key's fields (`POST` and `PATCH /-/keys`): a consumer or user type
 * that a header cannot carry (CR, LF, NUL, other controls, characters above U+00FF) would
 * make every request with the key fail at the backend call, so it is refused when the key is
 * written; names, lists and metadata are bounded in size. Each refusal is a 400 naming the
 * field and the bound. What fits reaches the backend as written.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinPlugins } from "../../../plugins/index.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const ADMIN = { authorization: "Bearer admin-secret", "content-type": "application/json" };

let backend: FakeBackend;
beforeAll(async () => {
  backend = await startLlmBackend();
});
afterAll(async () => await backend.stop());

const config = () => `
server: { consumer_header: X-Consumer, user_type_header: X-User-Type }
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: test-secret } }
services:
  - { type: chat, model: small-1, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }
`;

interface ErrorBody {
  error: { message: string; type: string };
}

describe("the bounds of an API key's fields", () => {
  let gw: TestRuntime;
  beforeAll(async () => {
    gw = await startTestRuntime(config(), builtinPlugins);
  });
  afterAll(async () => await gw?.close());

  const create = (body: Record<string, unknown>) => gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify(body) });
  const patch = (id: string, body: Record<string, unknown>) => gw.request(`/-/keys/${id}`, { method: "PATCH", headers: ADMIN, body: JSON.stringify(body) });
  async function refusal(response: Response): Promise<string> {
    const body = (await response.json()) as ErrorBody;
    expect(response.status, body.error.message).toBe(400);
    expect(body.error.type).toBe("invalid_request_error");
    return body.error.message;
  }
  async function created(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const response = await create(body);
    expect(response.status, await response.clone().text()).toBe(201);
    return (await response.json()) as { id: string; key: string };
  }
  const chat = (key: string) =>
    gw.request("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "small-1", messages: [{ role: "user", content: "hi" }] }),
    });

  it("refuses a consumer or user type a header cannot carry, saying which character and why", async () => {
    const cases: Array<[string, string]> = [
      ["team-a\r\nx-admin: yes", "U+000D at character 7"],
      ["team-a\nb", "U+000A at character 7"],
      ["team\u0000a", "U+0000 at character 5"],
      ["team\ta", "U+0009 at character 5"],
      ["team\u007fa", "U+007F at character 5"],
      ["team\u0085a", "U+0085 at character 5"],
      ["équipe-搜索", "U+641C at character 8"],
    ];
    for (const [consumer, where] of cases) {
      expect(await refusal(await create({ consumer })), JSON.stringify(consumer)).toBe(
        `invalid key: consumer: ${where} cannot be sent to backends in a header; use printable ASCII or Latin-1 characters only (no control characters such as CR, LF, NUL or tab, none above U+00FF)`,
      );
    }
    expect(await refusal(await create({ consumer: "team-a", user_type: "gold\r\n" + "x" }))).toContain(
      "user_type: U+000D at character 5 cannot be sent to backends in a header",
    );
    // Nothing was stored.
    const list = (await (await gw.request("/-/keys?limit=100", { headers: ADMIN })).json()) as { keys: Array<{ consumer: string }> };
    expect(list.keys.map((key) => key.consumer).filter((consumer) => consumer.startsWith("team"))).toEqual([]);
  });

  it("a Latin-1 consumer and user type within 256 characters reach the backend as written", async () => {
    const consumer = `Équipe ü ${"x".repeat(247)}`;
    expect(consumer).toHaveLength(256);
    const { key } = await created({ consumer, user_type: "gold ©" });
    const before = backend.received.length;
    expect((await chat(key)).status).toBe(200);
    const sent = backend.received.slice(before).find((r) => r.path === "/v1/chat/completions");
    expect(sent?.headers["x-consumer"]).toBe(consumer);
    expect(sent?.headers["x-user-type"]).toBe("gold ©");
  });

  it("bounds names, lists and metadata, naming the bound", async () => {
    expect(await refusal(await create({ consumer: "c".repeat(100 * 1024) }))).toBe("invalid key: consumer: at most 256 characters (got 102400)");
    expect(await refusal(await create({ consumer: "c".repeat(257) }))).toBe("invalid key: consumer: at most 256 characters (got 257)");
    expect(await refusal(await create({ consumer: "team-a", user_type: "u".repeat(300) }))).toBe("invalid key: user_type: at most 256 characters (got 300)");
    expect(await refusal(await create({ consumer: "team-a", groups: Array.from({ length: 101 }, (_, i) => `g${i}`) }))).toBe(
      "invalid key: groups: at most 100 entries (got 101)",
    );
    expect(await refusal(await create({ consumer: "team-a", models: ["chat-*", "m".repeat(300)] }))).toBe(
      "invalid key: models[1]: at most 256 characters (got 300)",
    );
    expect(await refusal(await create({ consumer: "team-a", metadata: { owner: "x".repeat(500 * 1024) } }))).toBe(
      "invalid key: metadata.owner: at most 512 characters (got 512000)",
    );
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    expect(await refusal(await create({ consumer: "team-a", metadata: seventeen }))).toBe("invalid key: metadata: at most 16 pairs (got 17)");
    expect(await refusal(await create({ consumer: "team-a", metadata: { ["n".repeat(65)]: "v" } }))).toBe(
      "invalid key: metadata: names of at most 64 characters (got one of 65)",
    );
    // An unknown field's name is quoted only in part.
    expect(await refusal(await create({ consumer: "team-a", ["f".repeat(10_000)]: 1 }))).toContain(`unknown field "${"f".repeat(64)}"; known:`);

    // At the bounds: accepted.
    const atBounds = {
      consumer: "c".repeat(256),
      groups: Array.from({ length: 100 }, (_, i) => `g${i}`.padEnd(256, "g")),
      metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, "k"), "v".repeat(512)])),
    };
    const { id } = await created(atBounds);
    // PATCH is held to the same bounds, and a refused change leaves the key as it was.
    expect(await refusal(await patch(id, { consumer: "a\r\nb", metadata: { big: "x".repeat(513) } }))).toBe(
      "invalid key: consumer: U+000D at character 2 cannot be sent to backends in a header; use printable ASCII or Latin-1 characters only (no control characters such as CR, LF, NUL or tab, none above U+00FF); metadata.big: at most 512 characters (got 513)",
    );
    const stored = (await (await gw.request(`/-/keys/${id}`, { headers: ADMIN })).json()) as Record<string, unknown>;
    expect(stored).toMatchObject(atBounds);
  });
});
