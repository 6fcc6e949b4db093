/**
 * The gateway's own endpoints: the core's (health, metrics, reload), the model list, usage
 * reporting and these docs. Endpoints of optional plugins are documented only when their
 * route exists in this runtime.
 */
import { identityHeaders, modelNames, oneOfStrings, type DocInput } from "./input.ts";
import { keyPaths } from "./key-paths.ts";
import { errors, jsonResponse } from "./responses.ts";
import type { Parameter, Paths } from "./types.ts";

const TEXT = (description: string, type: string) => ({ description, content: { [type]: { schema: { type: "string" } } } });

function corePaths(): Paths {
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
        description: "Builds a new runtime from the file and swaps it in atomically; on any problem the running config stays. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin"],
        responses: {
          "200": jsonResponse("ReloadResult", "Reloaded"),
          "500": jsonResponse("ReloadError", "Not reloaded, nothing changed: the file is invalid (type config_error, every problem listed with its path), or a plugin failed to set up for another reason (type api_error)"),
        },
      },
    },
  };
}

function docsPaths(input: DocInput): Paths {
  const documented = input.visible.filter((s) => s.swagger_url !== "" && s.model !== "");
  const params = (): Parameter[] => [
    { name: "type", in: "path", required: true, schema: oneOfStrings([...new Set(documented.map((s) => s.type))]) },
    { name: "model", in: "path", required: true, schema: oneOfStrings(modelNames(documented)) },
  ];
  const spec = (operationId: string, summary: string) => ({
    get: {
      operationId,
      summary,
      description: "Fetched from the service's swagger_url (cached briefly). Every operation is marked deprecated for a deprecated model; `servers` point at the gateway.",
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
      get: { operationId: "openapi", summary: "This document", description: "Generated from the live config; models hidden from the caller are left out.", tags: ["Docs"], responses: { "200": TEXT("OpenAPI 3.0.3", "application/yaml") } },
    },
    "/docs": { get: { operationId: "docs_page", summary: "Interactive API docs", tags: ["Docs"], responses: { "200": TEXT("HTML page", "text/html") } } },
  };
  if (documented.length > 0) {
    paths["/docs/spec/{type}/{model}"] = spec("backend_spec", "A model backend's own API document");
    paths["/swagger/{type}/{model}"] = spec("backend_swagger", "A model backend's own API document (alias)");
  }
  return paths;
}

function modelListPath(input: DocInput): Paths {
  if (!input.served("get", "/v1/models")) return {};
  const entry: Paths = !input.served("get", "/v1/models/{model}")
    ? {}
    : {
        "/v1/models/{model}": {
          get: {
            operationId: "retrieve_model",
            summary: "One model's entry of the list",
            description: "The OpenAI clients' models.retrieve. A model hidden from the caller is the unknown model's 404 (code model_not_found).",
            tags: ["Models"],
            parameters: [{ name: "model", in: "path", required: true, schema: oneOfStrings(modelNames(input.visible)) }, ...identityHeaders(input.config)],
            responses: { "200": jsonResponse("Model", "The model's entry"), ...errors(404) },
          },
        },
      };
  return {
    ...entry,
    "/v1/models": {
      get: {
        operationId: "list_models",
        summary: "Models the caller may see",
        tags: ["Models"],
        parameters: [
          { name: "model", in: "query", description: "Return this model's native info from its backend instead", schema: oneOfStrings(modelNames(input.visible)) },
          ...identityHeaders(input.config),
        ],
        responses: { "200": jsonResponse("ModelList", "The model list (or, with ?model=, the backend's answer)"), ...errors(404, 502) },
      },
    },
  };
}

function usagePaths(input: DocInput): Paths {
  const paths: Paths = {};
  const types = [...new Set(input.visible.map((s) => s.type))];
  const page: Parameter[] = [
    { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
    { name: "offset", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
  ];
  if (input.served("get", "/usage")) {
    paths["/usage"] = {
      get: {
        operationId: "my_usage",
        summary: "The calling consumer's usage",
        tags: ["Usage"],
        parameters: identityHeaders(input.config, { consumerRequired: true }),
        responses: { "200": jsonResponse("UsageRecord", "Usage per service type"), ...errors(400, 501) },
      },
    };
  }
  if (input.served("get", "/-/usage")) {
    paths["/-/usage"] = {
      get: {
        operationId: "all_usage",
        summary: "Usage of all consumers",
        description: "Admin endpoint: secure /-/* upstream.",
        tags: ["Admin", "Usage"],
        parameters: [
          { name: "consumer", in: "query", description: "Exactly this consumer", schema: { type: "string" } },
          { name: "type", in: "query", description: "Only this service type, consumers ranked by its requests", schema: oneOfStrings(types) },
          ...page,
        ],
        responses: { "200": jsonResponse("UsageList", "A page of consumers"), ...errors(400, 501) },
      },
    };
  }
  if (input.served("get", "/-/usage/report")) {
    paths["/-/usage/report"] = {
      get: {
        operationId: "usage_report",
        summary: "Calendar-aligned totals across consumers (UTC)",
        description: "At most 400 buckets. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin", "Usage"],
        parameters: [
          { name: "type", in: "query", required: true, schema: oneOfStrings(types) },
          { name: "period", in: "query", required: true, schema: { type: "string", enum: ["daily", "weekly", "monthly"] } },
          { name: "from", in: "query", required: true, schema: { type: "string", format: "date" } },
          { name: "to", in: "query", required: true, schema: { type: "string", format: "date" } },
          { name: "total", in: "query", schema: { type: "boolean" } },
          { name: "group_by", in: "query", description: "Adds `groups`, ranked by cost", schema: { type: "string", enum: ["consumer", "model", "key"] } },
        ],
        responses: { "200": jsonResponse("UsageReport", "One entry per bucket"), ...errors(400, 501) },
      },
    };
  }
  return paths;
}

function backendPaths(input: DocInput): Paths {
  if (!input.served("get", "/-/backends")) return {};
  return {
    "/-/backends": {
      get: {
        operationId: "backend_health",
        summary: "The health of each service's backends",
        description: "Healthy, or ejected (sitting out a Retry-After or an ejection for failures in a row) until when. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin"],
        responses: { "200": jsonResponse("BackendList", "One entry per configured backend of each service") },
      },
    },
  };
}

export function gatewayPaths(input: DocInput): Paths {
  return { ...corePaths(), ...modelListPath(input), ...usagePaths(input), ...backendPaths(input), ...keyPaths(input), ...docsPaths(input) };
}
