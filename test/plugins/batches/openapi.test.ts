/**
 * The batch plugin's part of the API document: every route it serves is listed (and the
 * document stays valid), none when the plugin is off.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { buildDocument } from "../../support/openapi-document.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime } from "../../support/runtime.ts";

const { config } = loadConfig(
  "batches: { enabled: true }\nservices:\n  - { type: chat, model: a, provider: chat_completions, operations: { chat: [/v1/chat/completions] } }\n",
  {},
);

const ROUTES = [
  ["post", "/v1/files"],
  ["get", "/v1/files"],
  ["get", "/v1/files/{file_id}"],
  ["get", "/v1/files/{file_id}/content"],
  ["delete", "/v1/files/{file_id}"],
  ["post", "/v1/batches"],
  ["get", "/v1/batches"],
  ["get", "/v1/batches/{batch_id}"],
  ["post", "/v1/batches/{batch_id}/cancel"],
  ["post", "/v1/messages/batches"],
  ["get", "/v1/messages/batches"],
  ["get", "/v1/messages/batches/{message_batch_id}"],
  ["get", "/v1/messages/batches/{message_batch_id}/results"],
  ["post", "/v1/messages/batches/{message_batch_id}/cancel"],
  ["get", "/-/batches"],
] as const;

describe("the batch routes in the API document", () => {
  it("lists every route the plugin serves, and stays valid", async () => {
    const gw = await startTestRuntime("batches: { enabled: true }\nservices: []\n", builtinPlugins);
    try {
      const openapi = await gw.request("/openapi.yaml");
      expect(openapi.status).toBe(200);
      const text = await openapi.text();
      for (const [, path] of ROUTES) expect(text, path).toContain(`${path}:`);
    } finally {
      await gw.close();
    }
    const doc = buildDocument({ config, authMode: "none", visible: config.services, served: () => true, syncProxy: true });
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    for (const [method, path] of ROUTES) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(doc.paths["/v1/batches"]?.post?.callbacks?.batchEnded).toBeDefined();
  });

  it("lists none of them when batches are off", async () => {
    const gw = await startTestRuntime("services: []\n", builtinPlugins);
    try {
      const text = await (await gw.request("/openapi.yaml")).text();
      for (const [, path] of ROUTES) expect(text, path).not.toContain(`${path}:`);
    } finally {
      await gw.close();
    }
  });
});
