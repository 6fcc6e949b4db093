/**
 * The gateway's own request and response bodies as TypeBox schemas (spec section 2 and
 * DESIGN section 4), rendered into `components.schemas` of the generated document.
 * Written in the OpenAPI 3.0 subset of JSON Schema: no `const`, no `null` type, no
 * `patternProperties` (so no `Type.Literal` or `Type.Record`).
 */
import { Type, type TSchema } from "@sinclair/typebox";
import { ERROR_CODES } from "../../../core/errors.ts";

/** A string restricted to `values` (`enum`, which OpenAPI 3.0 has; `Type.Literal` emits `const`, which it has not). */
export const StringEnum = (values: readonly string[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<string>({ type: "string", enum: [...values], ...options });

/** A reference to another component schema. */
export const ref = (name: string) => Type.Unsafe<unknown>({ $ref: `#/components/schemas/${name}` });

const Timestamp = (description: string) => Type.String({ format: "date-time", description });

const JOB_STATUSES = ["pending", "processing", "completed", "failed", "cancelled"] as const;

/** Where pricing is on (docs/cost.md). */
const Cost = Type.Number({ minimum: 0, description: "In pricing.currency, rounded to 6 decimals" });
const Tokens = Type.Object(
  { prompt: Type.Integer({ minimum: 0 }), completion: Type.Integer({ minimum: 0 }) },
  { description: "LLM tokens" },
);

export const componentSchemas: Record<string, TSchema> = {
  Error: Type.Object(
    {
      error: Type.Object({
        message: Type.String({ description: "What went wrong and what to change" }),
        type: Type.String({ description: "Error class, e.g. invalid_request_error, not_found_error, rate_limit_error", example: "not_found_error" }),
        code: StringEnum(Object.keys(ERROR_CODES), { description: "A stable code to branch on, e.g. model_not_found, budget_exceeded (docs/errors.md lists them)", example: "model_not_found" }),
      }),
    },
    { description: "Every error the gateway answers with has this body" },
  ),
  Expired: Type.Object({ status: StringEnum(["expired"]) }, { description: "The job record's retention passed (HTTP 410)" }),
  Health: Type.Object({
    status: StringEnum(["ok", "unavailable"]),
    checks: Type.Optional(
      Type.Object({ kv: Type.String(), objects: Type.String() }, { description: "With ?ready=1: each store's ping, \"ok\" or \"down: <reason>\"" }),
    ),
  }),
  ReloadResult: Type.Object({ status: StringEnum(["reloaded"]), services: Type.Integer({ minimum: 0, description: "Services in the new config" }) }),
  ReloadError: Type.Object({
    error: ref("ErrorDetail"),
    problems: Type.Array(Type.String(), { description: "Every problem of the refused file, each with its path" }),
  }),
  ErrorDetail: Type.Object({ message: Type.String(), type: Type.String(), code: StringEnum(["config_invalid", "reload_failed"]) }),
  JobAccepted: Type.Object(
    {
      job_id: Type.String({ format: "uuid" }),
      service_type: Type.String(),
      model: Type.String(),
      status: StringEnum(["pending"]),
    },
    { description: "Spec 2.1: the answer to a submission (202), repeated on an idempotent replay (200)" },
  ),
  JobRecord: Type.Object(
    {
      id: Type.String({ format: "uuid" }),
      status: StringEnum(JOB_STATUSES),
      service_type: Type.String(),
      model: Type.String({ description: "Model used" }),
      result: Type.Optional(Type.Object({}, { additionalProperties: true, description: "Present only when completed" })),
      error: Type.Optional(Type.String({ description: "Present only when failed" })),
      attempts: Type.Optional(Type.Integer({ minimum: 0, description: "Attempts started (services[].retry); 0 before the first" })),
      created_at: Timestamp("Submission time"),
    },
    { description: "Spec 2.2", additionalProperties: true },
  ),
  JobCancelled: Type.Object(
    { job_id: Type.String({ format: "uuid" }), status: StringEnum(JOB_STATUSES, { description: "The status after the call" }) },
    { description: "Pending jobs are cancelled at once; a processing job is stopped by its relay" },
  ),
  JobList: Type.Object({
    total: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 100 }),
    offset: Type.Integer({ minimum: 0 }),
    jobs: Type.Array(ref("JobRecord"), { description: "Most recent first" }),
  }),
  PurgeRequest: Type.Object({ model: Type.String({ minLength: 1, description: "Model whose jobs and files are deleted" }) }),
  PurgeResult: Type.Object({ model: Type.String(), deleted: Type.Integer({ minimum: 0, description: "Job records deleted" }) }),
  WebhookNotification: Type.Object(
    {
      job_id: Type.String({ format: "uuid" }),
      service_type: Type.String(),
      status: StringEnum(["completed", "failed", "cancelled"]),
      result: Type.Object({}, { additionalProperties: true }),
      error: Type.String({ description: "Empty when none" }),
      completed_at: Timestamp("When the job reached its terminal state"),
    },
    { description: "Spec 2.7: POSTed to callback_url when the job reaches a terminal state" },
  ),
  Model: Type.Object({
    id: Type.String({ description: "Model alias" }),
    object: StringEnum(["model"]),
    owned_by: Type.String(),
    service_type: Type.String(),
    provider: Type.Optional(Type.String()),
    backend_model: Type.Optional(Type.String({ description: "Only when the service-level backend_model rewrites the alias" })),
    capabilities: Type.Object({
      supports_sync: Type.Boolean(),
      supports_streaming: Type.Boolean(),
      deprecated: Type.Boolean({ description: "Still routed; plan to move off it" }),
    }),
  }),
  ModelList: Type.Object({ object: StringEnum(["list"]), data: Type.Array(ref("Model")) }, { description: "Spec 2.3, models the caller may see" }),
  UsageRecord: Type.Object(
    {
      consumer: Type.String(),
      retention: Type.String({ description: "\"all-time\" or a duration such as \"8760h\"" }),
      last_active: Type.Optional(Timestamp("Omitted if no activity")),
      usage: Type.Array(
        Type.Object({
          service_type: Type.String(),
          total: Type.Object({
            requests: Type.Integer({ minimum: 0 }),
            jobs: Type.Optional(Type.Integer({ minimum: 0, description: "Async types" })),
            processing_time_seconds: Type.Optional(Type.Number({ minimum: 0, description: "Async types" })),
            tokens: Type.Optional(Tokens),
            cost: Type.Optional(Cost),
          }),
          window: Type.Optional(
            Type.Object(
              {
                requests: Type.Integer({ minimum: 0 }),
                tokens: Type.Optional(Type.Integer({ minimum: 0 })),
                processing_time_seconds: Type.Optional(Type.Number({ minimum: 0 })),
                cost: Type.Optional(Type.Number({ minimum: 0, description: "In the cost budget's window, in pricing.currency" })),
                reset_at: Timestamp("When the window expires"),
              },
              { description: "The current rate-limit window; omitted when none is active" },
            ),
          ),
        }),
      ),
    },
    { description: "Spec 2.4" },
  ),
  UsageList: Type.Object(
    {
      total: Type.Integer({ minimum: 0 }),
      limit: Type.Integer({ minimum: 1, maximum: 100 }),
      offset: Type.Integer({ minimum: 0 }),
      consumers: Type.Array(ref("UsageRecord")),
    },
    { description: "Spec 2.5" },
  ),
  BackendList: Type.Object(
    {
      since: Type.String({ format: "date-time", description: "When the counts started: this gateway process's start or its last reload" }),
      backends: Type.Array(
        Type.Object({
          service_type: Type.String(),
          model: Type.String({ description: "The service's model alias" }),
          url: Type.String({ description: "The backend's address, without credentials or query" }),
          state: StringEnum(["healthy", "ejected"]),
          ejected_until: Type.String({ format: "date-time", nullable: true, description: "When an ejected backend is tried again; null when healthy" }),
          consecutive_failures: Type.Integer({ minimum: 0, description: "Failures since the last success or ejection" }),
          ejections: Type.Integer({ minimum: 0, description: "Sit-outs started (Retry-After or ejection) since `since`" }),
          requests: Type.Integer({ minimum: 0, description: "Attempts sent to the backend since `since` (each failover or retry attempt counts)" }),
          failures: Type.Integer({ minimum: 0, description: "Of those, the failed ones (a failover status or no answer)" }),
        }),
      ),
    },
    { description: "Each configured backend of each service, as the backend-health plugin sees it" },
  ),
  UsageBucket: Type.Object({
    bucket: Type.String({ description: "YYYYMMDD (daily), YYYY-Www (weekly) or YYYYMM (monthly)" }),
    requests: Type.Integer({ minimum: 0 }),
    jobs: Type.Optional(Type.Integer({ minimum: 0 })),
    processing_time_seconds: Type.Optional(Type.Number({ minimum: 0 })),
    tokens: Type.Optional(Tokens),
    cost: Type.Optional(Cost),
  }),
  UsageReport: Type.Object(
    {
      service_type: Type.String(),
      period: StringEnum(["daily", "weekly", "monthly"]),
      from: Type.String({ format: "date" }),
      to: Type.String({ format: "date" }),
      buckets: Type.Array(ref("UsageBucket"), { description: "Every bucket of the range, zero-filled" }),
      total: Type.Optional(Type.Object({}, { additionalProperties: true, description: "With total=true: the sum of all buckets" })),
      groups: Type.Optional(
        Type.Array(
          Type.Object({
            key: Type.String({ description: "The consumer, model alias or API key (the consumer when a request had none)" }),
            requests: Type.Integer({ minimum: 0 }),
            tokens: Type.Integer({ minimum: 0, description: "Prompt + completion" }),
            cost: Cost,
          }),
          { description: "With group_by: the range's totals per group, most cost first" },
        ),
      ),
    },
    { description: "Spec 2.6" },
  ),
  ChatCompletionRequest: Type.Object(
    {
      model: Type.String(),
      messages: Type.Array(
        Type.Object({ role: Type.String({ example: "user" }), content: Type.Unknown() }, { additionalProperties: true }),
        { minItems: 1 },
      ),
      stream: Type.Optional(Type.Boolean({ description: "Server-sent events; bypasses the response cache" })),
      max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
      temperature: Type.Optional(Type.Number()),
    },
    { additionalProperties: true, description: "Chat Completions request; other fields are passed on" },
  ),
  MessagesRequest: Type.Object(
    {
      model: Type.String(),
      messages: Type.Array(
        Type.Object({ role: StringEnum(["user", "assistant"]), content: Type.Unknown({ description: "A string or content blocks (text, image, tool_use, tool_result)" }) }, { additionalProperties: true }),
      ),
      max_tokens: Type.Integer({ minimum: 1 }),
      system: Type.Optional(Type.Unknown({ description: "A string or text blocks" })),
      stream: Type.Optional(Type.Boolean({ description: "Server-sent Messages events; bypasses the response cache" })),
      tools: Type.Optional(Type.Array(Type.Object({ name: Type.String(), description: Type.Optional(Type.String()), input_schema: Type.Unknown() }, { additionalProperties: true }))),
    },
    {
      additionalProperties: true,
      description: "Messages API request: forwarded as is to a backend that speaks it, else translated to Chat Completions and the answer back",
    },
  ),
  MessagesError: Type.Object(
    {
      type: StringEnum(["error"]),
      error: Type.Object({
        type: Type.String({ example: "not_found_error" }),
        message: Type.String({ description: "What went wrong and what to change" }),
      }),
    },
    { description: "Every error on the Messages routes has this body (the Messages API's own shape)" },
  ),
};
