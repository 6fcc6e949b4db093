/**
 * The async job endpoints (submit, get, cancel, list, purge): one submission operation per
 * service type, with the multipart fields and the type's models and operations, and the
 * shared job endpoints. Only documented when the jobs plugin serves them.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { deprecationOf, withNote } from "../../core/openapi/deprecation.ts";
import { type DocInput, fallbackModel, identityHeaders, modelNames, oneOfStrings } from "../../core/openapi/input.ts";
import { errors, jsonResponse, schemaRef } from "../../core/openapi/responses.ts";
import type { Operation, Parameter, Paths, Schema } from "../../core/openapi/types.ts";

const LIMIT_HEADERS = {
  "X-Concurrent-Limit": { description: "When max_concurrent applies", schema: { type: "integer" } },
  "X-Concurrent-Remaining": { description: "When max_concurrent applies", schema: { type: "integer" } },
  "X-ProcessingTime-Limit": { description: "When processing_time applies", schema: { type: "integer" } },
  "X-ProcessingTime-Remaining": { description: "When processing_time applies", schema: { type: "integer" } },
};

function byType(visible: readonly ServiceConfig[]): Map<string, ServiceConfig[]> {
  const out = new Map<string, ServiceConfig[]>();
  for (const service of visible) out.set(service.type, [...(out.get(service.type) ?? []), service]);
  return out;
}

function fileDescription(services: readonly ServiceConfig[]): string {
  const rules = services.map((s) => {
    const exts = s.accepted_exts.length > 0 ? `extensions ${s.accepted_exts.join(", ")}` : "any extension";
    return `${s.model || s.type}: up to ${s.max_file_size_mb} MB, ${exts}`;
  });
  return `The input file. ${rules.join("; ")}.`;
}

function submitSchema(services: readonly ServiceConfig[], all: readonly ServiceConfig[]): Schema {
  const deprecation = deprecationOf(services);
  const names = modelNames(services);
  const operations = [...new Set(services.flatMap((s) => Object.keys(s.operations)))];
  const fallback = fallbackModel(all, services);
  const model = withNote(
    fallback !== undefined ? `Target model; "${fallback}" when omitted.` : "Target model; required (several models and no default).",
    deprecation,
  );
  return {
    type: "object",
    required: ["file"],
    properties: {
      file: { type: "string", format: "binary", description: fileDescription(services) },
      model: { ...oneOfStrings(names), description: model },
      operation: {
        ...oneOfStrings(operations),
        description: "Operation name; required when the model has several operations.",
      },
      callback_url: { type: "string", format: "uri", description: "Called with the result when the job reaches a terminal state" },
    },
  };
}

const webhookCallback: NonNullable<Operation["callbacks"]> = {
  jobFinished: {
    "{$request.body#/callback_url}": {
      post: {
        operationId: "webhook_job_finished",
        summary: "Job reached a terminal state",
        description: "Retried with exponential backoff on 5xx and network errors; a 2xx, 3xx or 4xx counts as delivered.",
        tags: ["Jobs"],
        parameters: [
          { name: "X-Job-ID", in: "header", required: true, schema: { type: "string" } },
          {
            name: "X-Svc-Signature",
            in: "header",
            description: 'With webhooks.signing_secret: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`',
            schema: { type: "string" },
          },
        ],
        requestBody: { required: true, content: { "application/json": { schema: schemaRef("WebhookNotification") } } },
        responses: { "200": { description: "Delivered" } },
      },
    },
  },
};

function submitOperation(type: string, services: readonly ServiceConfig[], input: DocInput): Operation {
  const deprecation = deprecationOf(services);
  const parameters: Parameter[] = [
    {
      name: "Idempotency-Key",
      in: "header",
      description: "Repeat it to get the original job back instead of a new one (per consumer)",
      schema: { type: "string" },
    },
    ...identityHeaders(input.config, { priority: true }),
  ];
  return {
    operationId: `submit_${type.replace(/[^A-Za-z0-9]+/g, "_")}`,
    summary: `Submit a ${type} job`,
    description: [
      `Uploads the file and queues a job for a relay; poll \`GET /jobs/${type}/{id}\` or pass \`callback_url\`.`,
      `Models: ${modelNames(services).join(", ") || "(the type's single service)"}.`,
      ...(deprecation.operation ? ["Deprecated: every model of this type is deprecated (still served)."] : deprecation.note ? [deprecation.note] : []),
    ].join("\n\n"),
    tags: [type],
    ...(deprecation.operation ? { deprecated: true } : {}),
    parameters,
    requestBody: {
      required: true,
      content: { "multipart/form-data": { schema: submitSchema(services, input.config.services.filter((s) => s.type === type)) } },
    },
    responses: {
      "202": jsonResponse("JobAccepted", "Queued", LIMIT_HEADERS),
      "200": jsonResponse("JobAccepted", "Idempotent replay: the original job", {
        "X-Idempotent-Replay": { schema: { type: "string", enum: ["true"] } },
      }),
      ...errors(400, ...(input.authMode === "oauth2" ? [401] : []), 403, 404, 409, 413, 429, 500, 503),
    },
    callbacks: webhookCallback,
  };
}

export function jobPaths(input: DocInput): Paths {
  const paths: Paths = {};
  const types = byType(input.visible);
  if (types.size === 0) return paths;
  if (input.served("post", "/jobs/{service_type}")) {
    for (const [type, services] of types) paths[`/jobs/${encodeURIComponent(type)}`] = { post: submitOperation(type, services, input) };
  }
  const typeParam: Parameter = { name: "service_type", in: "path", required: true, schema: oneOfStrings([...types.keys()]) };
  const idParam: Parameter = { name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } };
  const item: Paths[string] = {};
  if (input.served("get", "/jobs/{service_type}/{id}")) {
    item.get = {
      operationId: "get_job",
      summary: "Get a job",
      description: "With server.consumer_header set and sent, only the submitting consumer sees the job (others get 404).",
      tags: ["Jobs"],
      parameters: [typeParam, idParam, ...identityHeaders(input.config)],
      responses: { "200": jsonResponse("JobRecord", "The job record"), ...errors(404), "410": jsonResponse("Expired", "The record's retention passed") },
    };
  }
  if (input.served("delete", "/jobs/{service_type}/{id}")) {
    item.delete = {
      operationId: "cancel_job",
      summary: "Cancel a job",
      description: "A pending job is cancelled at once; a processing job is stopped by its relay, asynchronously.",
      tags: ["Jobs"],
      parameters: [typeParam, idParam, ...identityHeaders(input.config)],
      responses: { "202": jsonResponse("JobCancelled", "The status after the call"), ...errors(404) },
    };
  }
  if (item.get || item.delete) paths["/jobs/{service_type}/{id}"] = item;
  if (input.served("get", "/jobs")) {
    paths["/jobs"] = {
      get: {
        operationId: "list_jobs",
        summary: "List the caller's jobs",
        description: "Most recent first, across service types. Needs server.consumer_header (400 without it).",
        tags: ["Jobs"],
        parameters: [
          { name: "service_type", in: "query", schema: oneOfStrings([...types.keys()]) },
          { name: "status", in: "query", schema: { type: "string", enum: ["pending", "processing", "completed", "failed", "cancelled"] } },
          { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
          { name: "offset", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
          ...identityHeaders(input.config, { consumerRequired: true }),
        ],
        responses: { "200": jsonResponse("JobList", "A page of jobs"), ...errors(400) },
      },
    };
  }
  if (input.served("post", "/-/jobs/purge")) {
    paths["/-/jobs/purge"] = {
      post: {
        operationId: "purge_jobs",
        summary: "Delete every job of a model",
        description: "Deletes the job records and their stored files. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin"],
        requestBody: { required: true, content: { "application/json": { schema: schemaRef("PurgeRequest") } } },
        responses: { "200": jsonResponse("PurgeResult", "Deleted"), ...errors(400, 413, 415) },
      },
    };
  }
  return paths;
}
