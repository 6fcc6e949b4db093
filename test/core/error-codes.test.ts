/**
 * Every error answer carries a stable `code` from the one table of docs/errors.md, answered with
 * the status and type that table gives it: the table equals `ERROR_CODES` and lists each code
 * once; every constructor of `errors`, an error built without a code, the stream error events
 * and a sample of real answers (no route, unknown model in both shapes, bad body, missing admin
 * token, job not found, body too large, a full request-rate window, a used-up token budget)
 * carry a documented code. The answers come from a gateway with every built-in plugin,
 * in-process on the memory store, its backend the injected fetch.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStores } from "../../adapters/stores.ts";
import {
  ConfigError,
  defaultErrorCode,
  ERROR_CODES,
  type ErrorCode,
  errors,
  GatewayError,
  PluginError,
  START_ERROR_CODES,
  startError,
  startErrorMessage,
  toErrorResponse,
} from "../../core/errors.ts";
import { messagesErrorEvent } from "../../core/llm/messages.ts";
import { errorEvent } from "../../core/llm/stream.ts";
import { Gateway } from "../../core/gateway.ts";
import { silentLogger } from "../../core/log.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import { until } from "../plugins/limits/harness.ts";

interface DocumentedCode {
  code: string;
  status: number;
  type: string;
}

/** The rows of the table in docs/errors.md: | `code` | status | `type` | when |. */
function documentedCodes(): DocumentedCode[] {
  const text = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
  return [...text.matchAll(/^\| `([a-z_]+)` \| (\d+) \| `([a-z_]+)` \|/gm)].map((row) => ({ code: row[1]!, status: Number(row[2]), type: row[3]! }));
}

const documented = new Map(documentedCodes().map((row) => [row.code, row]));

/** The error object of a body in the gateway's shape or the Messages one, with the status it came with. */
async function errorOf(response: Response): Promise<{ status: number; message: string; type: string; code: string }> {
  const body = (await response.json()) as { error: { message: string; type: string; code: string } };
  return { status: response.status, ...body.error };
}

/** The code is in the table, answered with the status and type the table gives it. */
function expectDocumented(error: { status: number; type: string; code: string }, what: string): void {
  const row = documented.get(error.code);
  expect(row, `${what}: code "${error.code}" is not in docs/errors.md`).toBeDefined();
  expect({ status: error.status, type: error.type }, what).toEqual({ status: row!.status, type: row!.type });
}

describe("the table of docs/errors.md", () => {
  it("lists every code once, with the status and type it is answered with, as ERROR_CODES does", () => {
    const rows = documentedCodes();
    expect(rows.length).toBeGreaterThan(20);
    expect(new Set(rows.map((row) => row.code)).size).toBe(rows.length);
    expect(rows).toEqual(Object.entries(ERROR_CODES).map(([code, { status, type }]) => ({ code, status, type })));
  });

  it("lists guardrail_blocked, whose body carries the rule's name as its code", () => {
    const text = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
    expect(text).toMatch(/^\| `guardrail_blocked` \| 400 \| `guardrail_blocked` \| A guardrail refused/m);
    expect(ERROR_CODES.guardrail_blocked).toEqual({ status: 400, type: "guardrail_blocked" });
  });
});

describe("the errors the code builds", () => {
  it("every constructor of `errors` answers with a documented code, its status and type, in the body", async () => {
    const args = ["what to fix", 30];
    for (const [name, build] of Object.entries(errors)) {
      const error = (build as (...parts: unknown[]) => GatewayError)(...args.slice(0, build.length));
      expectDocumented(error, `errors.${name}`);
      const response = error.toResponse();
      expect(await response.json(), `errors.${name}`).toEqual({ error: { message: error.message, type: error.type, code: error.code } });
    }
  });

  it("a GatewayError built without a code carries the generic documented code of its status", async () => {
    for (const status of [400, 401, 403, 404, 408, 409, 413, 429, 499, 500, 501, 502, 503, 504]) {
      const error = new GatewayError(status, ERROR_CODES[defaultErrorCode(status)].type, "a plugin's own error");
      expectDocumented(error, `status ${status}`);
      expect((await errorOf(error.toResponse())).code).toBe(error.code);
    }
    // A status no code has: the generic one of its class.
    expect(new GatewayError(418, "invalid_request_error", "teapot").code).toBe("invalid_request");
    expect(new GatewayError(507, "api_error", "full").code).toBe("internal_error");
  });

  it("an unexpected failure, and a GatewayError of another copy of the module, keep or get a documented code", async () => {
    const crash = await errorOf(toErrorResponse(new TypeError("x is undefined")));
    expect(crash).toEqual({ status: 500, type: "api_error", code: "internal_error", message: "internal error; see the gateway log for details" });
    const foreign = Object.assign(new Error("budget"), { name: "GatewayError", status: 429, type: "rate_limit_error", headers: {}, code: "budget_exceeded" });
    expectDocumented(await errorOf(toErrorResponse(foreign)), "a foreign GatewayError");
  });

  it("the error event that ends a stream the gateway cannot finish: stream_interrupted, in both shapes", () => {
    const chat = errorEvent("the backend stream broke off").data as { error: { code: ErrorCode; type: string } };
    expectDocumented({ status: 200, ...chat.error }, "chat stream");
    const messages = messagesErrorEvent("the backend stream broke off").data as { type: string; error: { code: string } };
    expect(messages).toEqual({ type: "error", error: { type: "api_error", message: "the backend stream broke off", code: "stream_interrupted" } });
  });
});

describe("answers of a running gateway", () => {
  let gateway: Gateway;
  beforeAll(async () => {
    const answer = () =>
      Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "gpt",
        choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
      });
    const dir = mkdtempSync(join(tmpdir(), "error-codes-"));
    const config = `
object_store: { dir: ${JSON.stringify(dir)} }
relay: { embedded: false }
server: { consumer_header: X-Consumer, max_body_mb: 1 }
admin: { token: admin-secret }
rate_limits:
  chat: { "*": { token_rate: 1, token_period: 1h } }
  rerank: { "*": { rate: 1, period: 1h } }
services:
  - { type: chat, model: gpt, provider: chat_completions, inference_url: "http://backend", operations: { chat: [/v1/chat/completions] } }
  - { type: msg, model: claude, provider: messages_api, inference_url: "http://backend", operations: { messages: [/v1/messages] } }
  - { type: rerank, model: rr, inference_url: "http://backend", operations: { rerank: [/v1/rerank] } }
`;
    gateway = await Gateway.create({
      readConfig: async () => config,
      env: {},
      importModule: async (specifier) => {
        throw new Error(`no module ${specifier}`);
      },
      openStores,
      plugins: builtinPlugins,
      log: silentLogger,
      fetch: async () => answer(),
      lookupHost: async () => ["127.0.0.1"],
    });
  });
  afterAll(async () => await gateway?.close());

  const request = (path: string, init?: RequestInit) => gateway.fetch(new Request(`http://gateway${path}`, init));

  const post = (path: string, body: string, consumer = "ann") =>
    request(path, { method: "POST", headers: { "content-type": "application/json", "x-consumer": consumer }, body });
  const chat = (model: string, consumer = "ann") =>
    post("/v1/chat/completions", JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }), consumer);

  it("no route, unknown model, bad body, no admin token, unknown job, too large: each its documented code", async () => {
    const cases: Array<[string, () => Promise<Response>, ErrorCode]> = [
      ["GET /nope", () => request("/nope"), "no_route"],
      ["an unknown model", () => chat("nope"), "model_not_found"],
      ["a body that is not JSON", () => post("/v1/chat/completions", "{not json"), "invalid_request"],
      ["an admin endpoint without the admin token", () => request("/-/config"), "unauthorized"],
      ["a job that does not exist", () => request("/jobs/chat/4f1c2a7e-8d3b-4c5e-9f6a-1b2c3d4e5f60", { headers: { "x-consumer": "ann" } }), "job_not_found"],
      [
        "a body over server.max_body_mb",
        () => post("/v1/rerank", JSON.stringify({ model: "rr", text: "x".repeat(2 * 1024 * 1024) }), "bob"),
        "payload_too_large",
      ],
    ];
    for (const [what, send, code] of cases) {
      const error = await errorOf(await send());
      expect(error.code, what).toBe(code);
      expectDocumented(error, what);
    }
  });

  it("an unknown model on /v1/messages: Anthropic's error shape, with the same code", async () => {
    const response = await post("/v1/messages", JSON.stringify({ model: "nope", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }));
    const body = (await response.json()) as { type: string; error: { type: string; code: string } };
    expect(response.status).toBe(404);
    expect(body).toMatchObject({ type: "error", error: { type: "not_found_error", code: "model_not_found" } });
  });

  it("a full request-rate window: 429 rate_limit_exceeded", async () => {
    expect((await post("/v1/rerank", JSON.stringify({ model: "rr" }), "carol")).status).toBe(200);
    const error = await errorOf(await post("/v1/rerank", JSON.stringify({ model: "rr" }), "carol"));
    expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded" });
    expectDocumented(error, "request rate");
  });

  it("a used-up token budget: 429 budget_exceeded", async () => {
    expect((await chat("gpt", "dave")).status).toBe(200);
    // The answer's tokens are added once it is counted, after the response.
    let refused: Response | undefined;
    await until(async () => {
      const response = await chat("gpt", "dave");
      if (response.status === 429) refused = response;
      return refused !== undefined;
    }, "the token budget to refuse");
    const error = await errorOf(refused!);
    expect(error).toMatchObject({ code: "budget_exceeded", message: expect.stringContaining("token budget of") });
    expectDocumented(error, "token budget");
  });
});

describe("start errors: each message lives with its code", () => {
  it("every code has the template of its message; startError raises a PluginError with the code and that message", () => {
    for (const [code, entry] of Object.entries(START_ERROR_CODES)) expect(typeof entry.message, code).toBe("function");
    const error = startError("GW_PLUGIN_DUPLICATE", { of: "service", name: "jobs", plugin: "my-jobs" });
    expect(error).toBeInstanceOf(PluginError);
    expect(error.code).toBe("GW_PLUGIN_DUPLICATE");
    expect(error.message).toBe('service "jobs" is already provided; plugin "my-jobs" cannot provide it again');
  });

  it("the messages the adapters print keep their wording", () => {
    expect(startErrorMessage("GW_CONFIG_NOT_FOUND", { path: "my.yaml", from: "CONFIG_PATH" })).toBe(
      "CONFIG_PATH names my.yaml, which does not exist; point CONFIG_PATH at your config file, or unset it to use ./config.yaml",
    );
    expect(startErrorMessage("GW_LISTEN_FAILED", { hostname: "10.9.9.9", port: 8080, cause: "not_local", detail: "", settings: "server.addr" })).toBe(
      'cannot listen on 10.9.9.9:8080: 10.9.9.9 is not an address of this machine; use one of its addresses, or ":8080" for all (server.addr)',
    );
    expect(startErrorMessage("GW_LISTEN_FAILED", { port: 80, cause: undefined, detail: "something else", settings: "PORT" })).toBe(
      "cannot listen on :80: something else (PORT)",
    );
    expect(new ConfigError(["services[0].type: required"]).message).toBe("invalid configuration:\n  services[0].type: required");
  });
});
