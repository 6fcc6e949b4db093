/**
 * The endpoints the docs plugin documents itself: the core's (health, metrics, reload, the
 * running config), which no plugin owns, and its own (this document and the docs pages).
 */
import { ADMIN } from "../../../core/openapi/admin.ts";
import { type DocInput, modelNames, oneOfStrings } from "../../../core/openapi/input.ts";
import { errors, jsonResponse } from "../../../core/openapi/responses.ts";
import type { Parameter, Paths } from "../../../core/openapi/types.ts";

const TEXT = (description: string, type: string) => ({ description, content: { [type]: { schema: { type: "string" } } } });

export function corePaths(): Paths {
  return {
    "/health": {
      get: {
        operationId: "health",
        summary: "Liveness and readiness",
        tags: ["Gateway"],
        parameters: [{ name: "ready", in: "query", description: "1 or true: also ping the stores (503 when one is down)", schema: { type: "string" } }],
        responses: { "200": jsonResponse("Health", "Up"), "503": jsonResponse("Health", "A store is down (with ?ready=1)") },
      },
    },
    "/metrics": {
      get: {
        operationId: "metrics",
        summary: "Prometheus metrics",
        tags: ["Gateway"],
        responses: { "200": TEXT("Prometheus text exposition", "text/plain") },
      },
    },
    "/-/reload": {
      post: {
        operationId: "reload",
        summary: "Reload the config file",
        description:
          "Builds a new runtime from the file and swaps it in atomically; on any problem the running config stays. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin"],
        responses: {
          "200": jsonResponse("ReloadResult", "Reloaded"),
          "500": jsonResponse(
            "ReloadError",
            "Not reloaded, nothing changed: the file is invalid (type config_error, every problem listed with its path), or a plugin failed to set up for another reason (type api_error)",
          ),
        },
      },
    },
  };
}

export function docsPaths(input: DocInput): Paths {
  const documented = input.visible.filter((s) => s.swagger_url !== "" && s.model !== "");
  const params = (): Parameter[] => [
    { name: "type", in: "path", required: true, schema: oneOfStrings([...new Set(documented.map((s) => s.type))]) },
    { name: "model", in: "path", required: true, schema: oneOfStrings(modelNames(documented)) },
  ];
  const spec = (operationId: string, summary: string) => ({
    get: {
      operationId,
      summary,
      description:
        "Fetched from the service's swagger_url (cached briefly). Every operation is marked deprecated for a deprecated model; `servers` point at the gateway.",
      tags: ["Docs"],
      parameters: params(),
      responses: {
        "200": { description: "The backend's OpenAPI document", content: { "application/json": { schema: { type: "object", additionalProperties: true } } } },
        ...errors(404, 502),
      },
    },
  });
  const paths: Paths = {
    "/openapi.yaml": {
      get: {
        operationId: "openapi",
        summary: "This document",
        description: "Generated from the live config; models hidden from the caller are left out.",
        tags: ["Docs"],
        responses: { "200": TEXT("OpenAPI 3.0.3", "application/yaml") },
      },
    },
    "/docs": { get: { operationId: "docs_page", summary: "Interactive API docs", tags: ["Docs"], responses: { "200": TEXT("HTML page", "text/html") } } },
  };
  if (documented.length > 0) {
    paths["/docs/spec/{type}/{model}"] = spec("backend_spec", "A model backend's own API document");
    paths["/swagger/{type}/{model}"] = spec("backend_swagger", "A model backend's own API document (alias)");
  }
  return paths;
}

/** The running config: a route of the core, always served. */
export function configPath(): Paths {
  return {
    "/-/config": {
      get: {
        operationId: "running_config",
        summary: "The running config, secrets redacted",
        description: `What this runtime runs (not the file). Every secret is "***". ${ADMIN}`,
        tags: ["Admin"],
        responses: { "200": jsonResponse("RunningConfig", "The config") },
      },
    },
  };
}
