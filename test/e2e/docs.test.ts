/**
 * Generated API docs as a user meets them: /openapi.yaml validated by swagger-parser for a
 * config with several services, deprecated and hidden models; the deprecation rules
 * (docs/design.md#versioning); regeneration on reload; the backends' own documents under /docs/spec
 * and /swagger (fetched with swagger_headers, cached, 404 and 502); the docs page and its assets.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";

type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};
type Operation = {
  deprecated?: boolean;
  parameters?: Array<{ name: string; in: string; description?: string; schema: { enum?: string[] } }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
};
type Schema = { properties?: Record<string, { enum?: string[]; description?: string }>; allOf?: Schema[]; required?: string[] };

const backendSpec = {
  openapi: "3.0.3",
  info: { title: "whisper backend", version: "2" },
  servers: [{ url: "http://10.0.0.7:9000" }],
  paths: {
    "/v2/models/{model}/infer": { post: { responses: { "200": { description: "ok" } } }, get: { responses: { "200": { description: "ok" } } } },
    "/v2/health": { get: { responses: { "200": { description: "ok" } } } },
  },
};

let specBackend: FakeBackend;
let brokenBackend: FakeBackend;
/** One gateway for the tests that only read; tests that reload or count fetches start their own. */
let shared: GatewayProcess;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  specBackend = await startBackend({ kind: "status", status: 200, body: JSON.stringify(backendSpec), contentType: "application/json" });
  brokenBackend = await startBackend({ kind: "status", status: 500, body: "boom" });
  shared = await startGateway(config());
});
afterAll(async () => {
  await shared?.kill();
  await Promise.all([specBackend.close(), brokenBackend.close()]);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
});

async function start(yaml: string): Promise<GatewayProcess> {
  const gw = await startGateway(yaml);
  running.push(gw);
  return gw;
}

const config = (extra = "") => `
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
services:
  - type: chat
    model: gpt-a
    provider: chat_completions
    inference_url: http://127.0.0.1:9
    operations: { chat: [/v1/chat/completions] }
  - type: chat
    model: gpt-old
    deprecated: true
    provider: chat_completions
    inference_url: http://127.0.0.1:9
    operations: { chat: [/v1/chat/completions] }
  - type: embeddings
    model: embed-old
    deprecated: true
    inference_url: http://127.0.0.1:9
    operations: { embed: [/v1/embeddings] }
  - type: transcription
    model: whisper
    default: true
    inference_url: http://127.0.0.1:9
    operations: { transcribe: [/v1/audio/*], infer: ["/v2/models/{model}/infer"] }
    swagger_url: ${specBackend.url}/openapi.json
    swagger_headers: { Authorization: Bearer spec-token }
  - type: transcription
    model: whisper-old
    deprecated: true
    inference_url: http://127.0.0.1:9
    operations: { infer: ["/v2/models/{model}/infer"] }
    swagger_url: ${specBackend.url}/openapi.json
  - type: transcription
    model: staff-only
    inference_url: http://127.0.0.1:9
    visibility: { user_types: [staff] }
    operations: { transcribe: [/v1/audio/*], secret: [/v1/secret] }
    swagger_url: ${specBackend.url}/openapi.json
  - type: ocr
    model: no-spec
    inference_url: http://127.0.0.1:9
    operations: { read: [/v1/ocr] }
  - type: ocr
    model: broken-spec
    inference_url: http://127.0.0.1:9
    operations: { read: [/v1/ocr] }
    swagger_url: ${brokenBackend.url}/openapi.json
${extra}`;

async function openapi(gw: GatewayProcess, headers: Record<string, string> = {}): Promise<{ text: string; doc: Doc }> {
  const response = await fetch(`${gw.url}/openapi.yaml`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("application/yaml");
  const text = await response.text();
  return { text, doc: parse(text) as Doc };
}

function modelField(operation: Operation): { enum?: string[]; description?: string } {
  const schema = operation.requestBody?.content["application/json"]?.schema ?? operation.requestBody?.content["multipart/form-data"]?.schema;
  const parts = schema?.allOf ? schema.allOf : schema ? [schema] : [];
  const field = parts.map((p) => p.properties?.model).find((m) => m !== undefined);
  if (!field) throw new Error("operation has no model field");
  return field;
}

describe("GET /openapi.yaml", () => {
  it("is a valid OpenAPI 3.0.3 document of the gateway's endpoints and configured paths", async () => {
    const gw = shared;
    const { doc } = await openapi(gw);
    // validate() dereferences in place; give it its own copy.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect((doc as unknown as { openapi: string }).openapi).toBe("3.0.3");

    const paths = Object.keys(doc.paths);
    const own = [
      "/health",
      "/metrics",
      "/-/reload",
      "/v1/models",
      "/jobs",
      "/jobs/{service_type}/{id}",
      "/-/jobs/purge",
      "/usage",
      "/-/usage",
      "/-/usage/report",
    ];
    for (const path of [...own, "/openapi.yaml", "/docs", "/docs/spec/{type}/{model}", "/swagger/{type}/{model}"]) {
      expect(paths).toContain(path);
    }
    for (const configured of ["/v1/chat/completions", "/v1/embeddings", "/v1/audio/{path}", "/v2/models/{model}/infer", "/v1/ocr"]) {
      expect(doc.paths[configured]?.post, configured).toBeDefined();
    }
    // The shared error body.
    expect(doc.components.schemas.Error.properties).toHaveProperty("error");
    expect(JSON.stringify(doc.paths["/v1/ocr"].post)).toContain("#/components/responses/NotFound");

    // One submission operation per job service type, multipart with the spec's fields.
    const submit = doc.paths["/jobs/transcription"].post;
    const form = submit.requestBody?.content["multipart/form-data"].schema;
    expect(Object.keys(form?.properties ?? {})).toEqual(["file", "model", "operation", "callback_url"]);
    expect(form?.required).toEqual(["file"]);
    expect(form?.properties?.model.enum).toEqual(["whisper", "whisper-old"]);
    expect(form?.properties?.operation.enum).toEqual(["transcribe", "infer"]);

    // The wildcard is a path parameter with a note.
    const wildcard = doc.paths["/v1/audio/{path}"].post;
    expect(wildcard.parameters?.find((p) => p.name === "path")?.description).toContain("/v1/audio/*");
  });

  it("marks an operation deprecated only when every model on it is, and names deprecated models otherwise", async () => {
    const gw = shared;
    const { doc } = await openapi(gw);

    const chat = doc.paths["/v1/chat/completions"].post;
    expect(chat.deprecated).toBeUndefined();
    expect(modelField(chat).enum).toEqual(["gpt-a", "gpt-old"]);
    expect(modelField(chat).description).toContain("Deprecated model: gpt-old");

    expect(doc.paths["/v1/embeddings"].post.deprecated).toBe(true);

    const infer = doc.paths["/v2/models/{model}/infer"].post;
    expect(infer.deprecated).toBeUndefined();
    const pathModel = infer.parameters?.find((p) => p.name === "model" && p.in === "path");
    expect(pathModel?.schema.enum).toEqual(["whisper", "whisper-old"]);
    expect(pathModel?.description).toContain("Deprecated model: whisper-old");

    const submit = doc.paths["/jobs/transcription"].post;
    expect(submit.deprecated).toBeUndefined();
    expect(submit.requestBody?.content["multipart/form-data"].schema.properties?.model.description).toContain("whisper-old");
    expect(doc.paths["/jobs/embeddings"].post.deprecated).toBe(true);
  });

  it("leaves hidden models out for callers outside their audience", async () => {
    const gw = shared;
    const anonymous = await openapi(gw);
    expect(anonymous.text).not.toContain("staff-only");
    expect(anonymous.doc.paths["/v1/secret"]).toBeUndefined();
    expect(modelField(anonymous.doc.paths["/v1/audio/{path}"].post).enum).toEqual(["whisper"]);

    const outsider = await openapi(gw, { "X-User-Type": "guest" });
    expect(outsider.text).not.toContain("staff-only");

    const staff = await openapi(gw, { "X-User-Type": "staff" });
    await expect(SwaggerParser.validate(structuredClone(staff.doc) as never)).resolves.toBeTruthy();
    expect(staff.doc.paths["/v1/secret"]?.post).toBeDefined();
    expect(modelField(staff.doc.paths["/v1/audio/{path}"].post).enum).toEqual(["whisper", "staff-only"]);
    expect(staff.doc.paths["/jobs/transcription"].post.requestBody?.content["multipart/form-data"].schema.properties?.model.enum).toContain("staff-only");
  });

  it("is regenerated when the config is reloaded", async () => {
    const gw = await start(config());
    expect((await openapi(gw)).doc.paths["/v1/rerank"]).toBeUndefined();
    gw.writeConfig(config(`  - type: rerank
    model: reranker
    deprecated: true
    inference_url: http://127.0.0.1:9
    operations: { rerank: [/v1/rerank] }
`));
    expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
    const { doc } = await openapi(gw);
    expect(doc.paths["/v1/rerank"].post.deprecated).toBe(true);
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });
});

describe("backend API documents", () => {
  it("serves swagger_url's document with swagger_headers, cached, with every operation deprecated for a deprecated model", async () => {
    const gw = await start(config());
    specBackend.reset();

    const current = await fetch(`${gw.url}/docs/spec/transcription/whisper`);
    expect(current.status).toBe(200);
    const spec = (await current.json()) as typeof backendSpec;
    expect(spec.info.title).toBe("whisper backend");
    expect(JSON.stringify(spec.paths)).not.toContain("deprecated");
    // Callers use the gateway, not the backend's internal address.
    expect(spec.servers).toEqual([{ url: "/", description: "Through the gateway" }]);
    expect(specBackend.requests[0].headers.authorization).toBe("Bearer spec-token");

    const old = await fetch(`${gw.url}/swagger/transcription/whisper-old`);
    expect(old.status).toBe(200);
    const oldSpec = (await old.json()) as { paths: Record<string, Record<string, { deprecated?: boolean }>> };
    const operations = Object.values(oldSpec.paths).flatMap((item) => Object.values(item));
    expect(operations).toHaveLength(3);
    for (const operation of operations) expect(operation.deprecated).toBe(true);

    // Both routes serve the same cached documents: two models, two fetches.
    expect((await fetch(`${gw.url}/swagger/transcription/whisper`)).status).toBe(200);
    expect((await fetch(`${gw.url}/docs/spec/transcription/whisper-old`)).status).toBe(200);
    expect(specBackend.requests).toHaveLength(2);
  });

  it("answers 404 without swagger_url or for a hidden model, and 502 when the backend fails", async () => {
    const gw = shared;
    const none = await fetch(`${gw.url}/docs/spec/ocr/no-spec`);
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { message: string } }).error.message).toContain("swagger_url");

    const hidden = await fetch(`${gw.url}/swagger/transcription/staff-only`);
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toMatchObject({ error: { type: "not_found_error" } });
    expect((await fetch(`${gw.url}/swagger/transcription/staff-only`, { headers: { "X-User-Type": "staff" } })).status).toBe(200);

    const broken = await fetch(`${gw.url}/docs/spec/ocr/broken-spec`);
    expect(broken.status).toBe(502);
    const body = (await broken.json()) as { error: { message: string; type: string } };
    expect(body.error.type).toBe("backend_error");
    expect(body.error.message).toContain("HTTP 500");
    await waitUntil(() => gw.output().includes('"event":"backend_spec_unavailable"'));
  });
});

describe("GET /docs", () => {
  it("serves the Swagger UI page and its assets from the gateway itself", async () => {
    const gw = shared;
    const page = await fetch(`${gw.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await page.text();
    expect(html).toContain("docs/assets/swagger-ui-bundle.js");
    expect(html).not.toMatch(/https?:\/\//);
    // The top bar offers the visible models' backend documents.
    expect(html).toContain("docs/spec/transcription/whisper");
    expect(html).not.toContain("staff-only");

    for (const [file, type] of [["swagger-ui-bundle.js", "javascript"], ["swagger-ui.css", "text/css"], ["init.js", "javascript"]]) {
      const asset = await fetch(`${gw.url}/docs/assets/${file}`);
      expect(asset.status, file).toBe(200);
      expect(asset.headers.get("content-type")).toContain(type);
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    expect((await fetch(`${gw.url}/docs/assets/package.json`)).status).toBe(404);
  });
});
