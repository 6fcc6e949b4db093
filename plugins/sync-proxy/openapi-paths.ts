/**
 * One operation per configured sync path: the models on it (the `model` field's enum),
 * deprecation, `{model}` templates as path parameters and `/*` wildcards as a `{path}`
 * parameter with a note, since OpenAPI has no wildcard paths. And `GET /v1/models`.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { type Deprecation, deprecationOf, withNote } from "../../core/openapi/deprecation.ts";
import { type DocInput, fallbackModel, identityHeaders, modelNames, oneOfStrings } from "../../core/openapi/input.ts";
import { messagesRoute } from "../../core/llm/messages.ts";
import { errors, jsonResponse, messagesErrors, schemaRef } from "../../core/openapi/responses.ts";
import type { Operation, Parameter, Paths, RequestBody, ResponseObject, Schema } from "../../core/openapi/types.ts";

/** Visible services by configured path, in config order. */
export function servicesByPath(visible: readonly ServiceConfig[]): Map<string, ServiceConfig[]> {
  const byPath = new Map<string, ServiceConfig[]>();
  for (const service of visible) {
    for (const paths of Object.values(service.operations)) {
      for (const path of paths) {
        const list = byPath.get(path) ?? [];
        if (!list.includes(service)) list.push(service);
        byPath.set(path, list);
      }
    }
  }
  return byPath;
}

/** `/v1/audio/*` -> `/v1/audio/{path}`; `{model}` templates are already OpenAPI templates. */
export function openApiPath(pattern: string): string {
  return pattern.endsWith("/*") ? `${pattern.slice(0, -2)}/{path}` : pattern;
}

function operationId(pattern: string): string {
  const slug = pattern.replace(/\{model\}/g, "by_model").replace(/\*/g, "any").replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "");
  return `proxy_${slug || "root"}`;
}

function modelField(services: readonly ServiceConfig[], all: readonly ServiceConfig[], deprecation: Deprecation): Schema {
  const names = modelNames(services);
  const fallback = fallbackModel(all, services);
  const when = fallback ? ` Optional: "${fallback}" serves requests without one.` : " Required: several models share this path and none is the default.";
  return {
    ...oneOfStrings(names),
    description: withNote(`Model alias.${when}`, deprecation),
  };
}

/** An inbound Messages route (`/v1/messages`, its count_tokens) that LLM services serve. */
const isMessages = (pattern: string, services: readonly ServiceConfig[]) => messagesRoute(pattern) !== undefined && services.some((s) => s.provider !== "");

function requestBody(
  pattern: string,
  services: readonly ServiceConfig[],
  all: readonly ServiceConfig[],
  deprecation: Deprecation,
  modelInPath: boolean,
): RequestBody {
  const model = modelInPath ? {} : { model: modelField(services, all, deprecation) };
  const llm = services.some((s) => s.provider !== "");
  if (llm) {
    const request = isMessages(pattern, services) ? "MessagesRequest" : "ChatCompletionRequest";
    const schema: Schema = { allOf: [schemaRef(request), { type: "object", properties: model }] };
    return { required: true, content: { "application/json": { schema } } };
  }
  return {
    description: "Any content type is forwarded as is; JSON bodies are read (capped by server.max_body_mb) to find `model`.",
    content: {
      "application/json": { schema: { type: "object", additionalProperties: true, properties: model } },
      "multipart/form-data": {
        schema: { type: "object", additionalProperties: true, properties: { ...model, file: { type: "string", format: "binary" } } },
      },
    },
  };
}

function success(pattern: string, services: readonly ServiceConfig[]): ResponseObject {
  if (isMessages(pattern, services)) {
    return {
      description: messagesRoute(pattern) === "count_tokens"
        ? "`{input_tokens}` from a backend that speaks the Messages API (404 for one that does not)"
        : "The message in the Messages API's shape (translated from Chat Completions where the backend speaks those); `X-Cache: HIT|MISS`",
      content: {
        "application/json": { schema: { type: "object", additionalProperties: true } },
        "text/event-stream": {
          schema: { type: "string", description: 'With "stream": true: message_start, content_block_*, message_delta, message_stop (or an error event)' },
        },
      },
    };
  }
  if (services.some((s) => s.provider !== "")) {
    return {
      description: "The chat completion (translated to the Chat Completions shape where the provider needs it); `X-Cache: HIT|MISS`",
      content: {
        "application/json": { schema: { type: "object", additionalProperties: true } },
        "text/event-stream": { schema: { type: "string", description: 'With "stream": true' } },
      },
    };
  }
  return { description: "The backend's answer, passed through", content: { "*/*": { schema: { type: "string", format: "binary" } } } };
}

function parameters(pattern: string, services: readonly ServiceConfig[], deprecation: Deprecation, input: DocInput): Parameter[] {
  const out: Parameter[] = [];
  if (pattern.includes("{model}")) {
    const names = modelNames(services);
    out.push({
      name: "model",
      in: "path",
      required: true,
      description: withNote("Model alias, taken from the URL (no `model` in the body needed).", deprecation),
      schema: oneOfStrings(names),
    });
  }
  if (pattern.endsWith("/*")) {
    out.push({
      name: "path",
      in: "path",
      required: true,
      description: `Wildcard: the gateway serves every path under ${
        pattern.slice(0, -2)
      }/ (configured as \`${pattern}\`) and forwards it as is; deeper paths work too.`,
      schema: { type: "string" },
    });
  }
  return [...out, ...identityHeaders(input.config, { priority: true })];
}

function describe(pattern: string, services: readonly ServiceConfig[], deprecation: Deprecation): string {
  const names = modelNames(services);
  const lines = [names.length > 0 ? `Models: ${names.join(", ")}.` : "Served by the service's single backend."];
  if (services.some((s) => s.provider !== "")) {
    lines.push('LLM proxy: weighted backends with failover on 5xx and network errors; `"stream": true` streams server-sent events.');
  } else {
    lines.push("Forwarded to the backend address plus this path; the response is passed through.");
  }
  if (pattern.endsWith("/*")) lines.push(`Wildcard path \`${pattern}\`: exact configured paths take priority over it.`);
  if (deprecation.operation) lines.push("Deprecated: every model on this path is deprecated (still served).");
  else if (deprecation.note) lines.push(deprecation.note);
  return lines.join("\n\n");
}

/** "chat: gpt-a, gpt-b" (at most three names, then a count). */
function summary(services: readonly ServiceConfig[]): string {
  const types = [...new Set(services.map((s) => s.type))].join(", ");
  const names = modelNames(services);
  if (names.length === 0) return types;
  const shown = names.length > 3 ? `${names.slice(0, 3).join(", ")} and ${names.length - 3} more` : names.join(", ");
  return `${types}: ${shown}`;
}

export function syncPaths(input: DocInput): Paths {
  if (!input.syncProxy) return {};
  const paths: Paths = {};
  const oauth2 = input.authMode === "oauth2";
  const configured = servicesByPath(input.config.services);
  for (const [pattern, services] of servicesByPath(input.visible)) {
    const key = openApiPath(pattern);
    // Two patterns can only collide as OpenAPI paths when one is a wildcard; the first keeps it.
    if (paths[key]) continue;
    const deprecation = deprecationOf(services);
    const operation: Operation = {
      operationId: operationId(pattern),
      summary: summary(services),
      description: describe(pattern, services, deprecation),
      tags: [...new Set(services.map((s) => s.type))],
      ...(deprecation.operation ? { deprecated: true } : {}),
      parameters: parameters(pattern, services, deprecation, input),
      requestBody: requestBody(pattern, services, configured.get(pattern) ?? services, deprecation, pattern.includes("{model}")),
      responses: {
        "200": success(pattern, services),
        ...(isMessages(pattern, services) ? messagesErrors : errors)(400, ...(oauth2 ? [401] : []), 403, 404, 413, 429, 502, 503, 504),
      },
    };
    paths[key] = { post: operation };
  }
  return paths;
}

export function modelListPath(input: DocInput): Paths {
  if (!input.served("get", "/v1/models")) return {};
  const entry: Paths = !input.served("get", "/v1/models/{model}") ? {} : {
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
          {
            name: "model",
            in: "query",
            description: "Return this model's native info from its backend instead",
            schema: oneOfStrings(modelNames(input.visible)),
          },
          ...identityHeaders(input.config),
        ],
        responses: { "200": jsonResponse("ModelList", "The model list (or, with ?model=, the backend's answer)"), ...errors(404, 502) },
      },
    },
  };
}
