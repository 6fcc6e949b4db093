/**
 * The document generator without a gateway: every optional endpoint served (usage
 * reports, oauth2), validated by swagger-parser; endpoints of absent plugins left out;
 * the deprecation rule; how registered routes are recognised.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { deprecationOf } from "../../../plugins/docs/openapi/deprecation.ts";
import { buildDocument } from "../../support/openapi-document.ts";
import { servedRoutes } from "../../../plugins/docs/served-routes.ts";
import type { GatewayConfig } from "../../../core/config/schema.ts";

/** The mode the auth plugin's `auth` service says for this config (the docs plugin asks it). */
const authModeOf = (c: GatewayConfig) => c.auth.mode;

const { config } = loadConfig(
  `
server: { consumer_header: X-Consumer, priority_header: X-Priority }
auth:
  mode: oauth2
  oauth2: { jwks_url: "http://127.0.0.1:9/jwks" }
services:
  - { type: chat, model: a, provider: chat_completions, operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: b, deprecated: true, provider: chat_completions, operations: { chat: [/v1/chat/completions] } }
  - { type: asr, operations: { run: ["/v1/asr/*"] } }
`,
  {},
);

describe("the generated document", () => {
  it("documents every optional endpoint that is served and stays valid", async () => {
    const doc = buildDocument({ config, authMode: authModeOf(config), visible: config.services, served: () => true, syncProxy: true });
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    for (const path of ["/usage", "/-/usage", "/-/usage/report", "/jobs/asr", "/v1/asr/{path}", "/v1/models/{model}"]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    for (const path of ["/-/queues", "/-/relay/deadletter", "/-/webhooks/retries", "/-/webhooks/deadletter", "/-/config", "/-/console"]) {
      expect(doc.paths[path]?.get, path).toBeDefined();
    }
    for (const path of ["/-/relay/deadletter/discard", "/-/webhooks/deadletter/redeliver"]) expect(doc.paths[path]?.post, path).toBeDefined();
    expect(doc.components.securitySchemes).toEqual({ bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } });
    expect(doc.security).toEqual([{ bearer: [] }, {}]);
    const submit = doc.paths["/jobs/chat"].post;
    expect(submit?.parameters?.map((p) => p.name)).toEqual(["Idempotency-Key", "X-Consumer", "X-Priority"]);
    expect(submit?.callbacks?.jobFinished).toBeDefined();
    expect(Object.keys(doc.paths["/jobs/chat"].post?.responses ?? {})).toContain("401");
  });

  it("documents every field a job record carries, the retry policy's attempts included", () => {
    const doc = buildDocument({ config, authMode: authModeOf(config), visible: config.services, served: () => true, syncProxy: true });
    const record = (doc.components.schemas as Record<string, { properties?: Record<string, unknown> }>).JobRecord;
    expect(Object.keys(record.properties ?? {})).toEqual(expect.arrayContaining(["id", "status", "error", "attempts", "created_at"]));
  });

  it("documents the outcomes (refused requests) of a usage record's totals, a report's buckets and its groups", () => {
    const doc = buildDocument({ config, authMode: authModeOf(config), visible: config.services, served: () => true, syncProxy: true });
    type Schema = { properties?: Record<string, Schema>; items?: Schema; additionalProperties?: unknown };
    const schemas = doc.components.schemas as Record<string, Schema>;
    const outcomes = [
      schemas.UsageRecord.properties?.usage.items?.properties?.total.properties?.outcomes,
      schemas.UsageBucket.properties?.outcomes,
      schemas.UsageReport.properties?.groups.items?.properties?.outcomes,
    ];
    for (const schema of outcomes) expect(schema).toMatchObject({ type: "object", additionalProperties: { type: "integer", minimum: 1 } });
  });

  it("documents the API key admin API and the api_key security schemes, and stays valid", async () => {
    const keys = loadConfig(
      `
admin: { token: t }
auth: { mode: api_key, api_key: { secret: s } }
services:
  - { type: chat, model: a, provider: chat_completions, operations: { chat: [/v1/chat/completions] } }
`,
      {},
    ).config;
    const doc = buildDocument({ config: keys, authMode: authModeOf(keys), visible: keys.services, served: () => true, syncProxy: true });
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect(Object.keys(doc.paths["/-/keys"])).toEqual(["post", "get"]);
    expect(Object.keys(doc.paths["/-/keys/{id}"])).toEqual(["get", "patch", "delete"]);
    expect(Object.keys(doc.paths["/-/keys/{id}/rotate"].post?.responses ?? {})).toContain("200");
    expect(doc.components.securitySchemes).toEqual({
      bearer: expect.objectContaining({ scheme: "bearer" }),
      apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
    });
    const created = (doc.components.schemas as Record<string, { properties?: Record<string, unknown> }>).KeyCreated;
    expect(Object.keys(created.properties ?? {})).toEqual(
      expect.arrayContaining(["id", "key", "prefix", "consumer", "models", "limits", "expires_at", "created_at"]),
    );
    expect(buildDocument({ config: keys, authMode: authModeOf(keys), visible: keys.services, served: () => false, syncProxy: true }).paths["/-/keys"])
      .toBeUndefined();
  });

  it("documents the 413 an oversize admin body gets, and the 415 of one sent as another type than application/json", () => {
    const doc = buildDocument({ config, authMode: authModeOf(config), visible: config.services, served: () => true, syncProxy: true });
    expect(Object.keys(doc.paths["/-/jobs/purge"].post?.responses ?? {})).toEqual(["200", "400", "413", "415"]);
    for (const path of ["/-/relay/deadletter/discard", "/-/webhooks/deadletter/redeliver"]) {
      expect(Object.keys(doc.paths[path].post?.responses ?? {}), path).toContain("415");
    }
  });

  it("documents a refused reload as a 500 with every problem, whether the file is wrong or a plugin failed", () => {
    const doc = buildDocument({ config, authMode: authModeOf(config), visible: config.services, served: () => true, syncProxy: true });
    const responses = doc.paths["/-/reload"].post?.responses as Record<string, { content?: Record<string, { schema: unknown }> }>;
    expect(Object.keys(responses)).toEqual(["200", "500"]);
    expect(responses["500"].content?.["application/json"].schema).toEqual({ $ref: "#/components/schemas/ReloadError" });
  });

  it("documents the inbound Messages operations where a service lists them, with the Messages request and error shapes", async () => {
    const { config: messages } = loadConfig(
      `
services:
  - { type: chat, model: claude, provider: messages_api, operations: { messages: [/v1/messages, /v1/messages/count_tokens], chat: [/v1/chat/completions] } }
`,
      {},
    );
    const doc = buildDocument({ config: messages, authMode: authModeOf(messages), visible: messages.services, served: () => true, syncProxy: true });
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    const schemaOf = (path: string) => JSON.stringify(doc.paths[path].post?.requestBody);
    for (const path of ["/v1/messages", "/v1/messages/count_tokens"]) {
      expect(schemaOf(path)).toContain("#/components/schemas/MessagesRequest");
      const notFound = doc.paths[path].post?.responses["404"] as { content?: Record<string, { schema: unknown }> };
      expect(notFound.content?.["application/json"].schema).toEqual({ $ref: "#/components/schemas/MessagesError" });
    }
    // Chat-completions operations keep their own shapes.
    expect(schemaOf("/v1/chat/completions")).toContain("#/components/schemas/ChatCompletionRequest");
    expect(doc.paths["/v1/chat/completions"].post?.responses["404"]).toEqual({ $ref: "#/components/responses/NotFound" });
  });

  it("leaves out what this runtime does not serve", async () => {
    const doc = buildDocument({ config, authMode: authModeOf(config), visible: config.services, served: () => false, syncProxy: false });
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect(Object.keys(doc.paths).sort()).toEqual(["/-/config", "/-/reload", "/docs", "/health", "/metrics", "/openapi.yaml"]);
    expect(doc.tags.map((t) => t.name)).toEqual(["Gateway", "Admin", "Docs"]);
  });
});

describe("deprecation (docs/design.md#versioning)", () => {
  const [a, b] = config.services;
  it("deprecates an operation only when every model on it is, and names the deprecated ones until then", () => {
    expect(deprecationOf([a])).toEqual({ operation: false });
    expect(deprecationOf([a, b])).toEqual({ operation: false, note: "Deprecated model: b (still served; plan to move off)." });
    expect(deprecationOf([b])).toEqual({ operation: true });
  });
});

describe("served routes", () => {
  it("recognises a route whatever its parameter names, and ignores catch-alls", () => {
    const app = new Hono();
    app.all("*", (c) => c.text(""));
    app.post("/jobs/:type", (c) => c.text(""));
    app.get("/jobs/:type/:id{[0-9a-f-]+}", (c) => c.text(""));
    const served = servedRoutes(app);
    expect(served("post", "/jobs/{service_type}")).toBe(true);
    expect(served("get", "/jobs/{service_type}/{id}")).toBe(true);
    expect(served("delete", "/jobs/{service_type}/{id}")).toBe(false);
    expect(served("get", "/usage")).toBe(false);
  });
});
