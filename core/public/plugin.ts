/**
 * The public entry point for plugin authors: `import { definePlugin } from "inference-gateway/plugin"`
 * (package.json `exports`). Everything a plugin written outside this repository needs: the
 * plugin definition and API with every type they name (test/core/public/entry-exports.test.ts
 * walks them), the provider and client protocol APIs and their builders, the errors a plugin may throw or answer
 * with, and the contracts of the services it may use, a request mode's included. Built-in
 * plugins import the same modules by relative path.
 */

// The plugin itself, and TypeBox for its config section's schema.
export { type Static, type TObject, type TSchema, Type } from "@sinclair/typebox";
export {
  type BackgroundTask,
  CORE_EVENTS,
  DEFAULT_PLUGIN_LAYER,
  definePlugin,
  type EventName,
  type GatewayEvents,
  type GatewayServices,
  type PinnedFetch,
  PLUGIN_API_VERSION,
  PLUGIN_LAYERS,
  type PluginApi,
  type PluginContributions,
  type PluginDefinition,
  type PluginLayer,
  type ProcessRole,
  type WorkScope,
} from "../plugins/types.ts";

// Routes and middleware: `api.routes` is a Hono app, `api.middleware` takes a Hono middleware.
export type { Context, Hono, MiddlewareHandler, Next } from "hono";
// What a plugin adds to the API document and the admin console (`definePlugin({ openapi, consolePanels })`).
export type { OpenApiContribution, PathsBuilder } from "../openapi/contribution.ts";
export type { DocInput } from "../openapi/input.ts";
export type { MediaType, Method, Operation, Parameter, PathItem, Paths, RequestBody, ResponseObject, ResponseOrRef, Schema, Tag } from "../openapi/types.ts";
export type { ConsolePanel } from "../console/panel.ts";

// Errors: a PluginError refuses a start or reload; a GatewayError (or one of `errors`) answers a request.
export { PluginError } from "../plugins/host.ts";
export { type ErrorBody, type ErrorCode, errorResponse, errors, type ErrorType, GatewayError } from "../errors.ts";

// A custom LLM provider: its definition, its translator and the chat-completions builders.
export * from "../llm/provider.ts";
// A custom client protocol: its definition, the shape checks, and the middleware that puts the gateway's errors in its shape.
export * from "../llm/client-protocol.ts";
export { inErrorShape, listsAnyPath, protocolErrors } from "../llm/protocol-errors.ts";
export type { StreamErrorFields } from "../llm/events.ts";
// Hooks into the LLM proxy (the `llmHooks` service) and kinds of guardrail (the `guardrailKinds` service).
export { type ChatStreamFilter, type LlmHook, type LlmHookRequest, type LlmHooks, type LlmRequestHook, StreamRefused } from "../llm/hooks.ts";
export type { GuardrailCheckContext, GuardrailKind, GuardrailKinds, GuardrailVerdict } from "../llm/guardrail-kinds.ts";

// Requests: the pipeline a mode runs them through, its context, and the registry that resolves services.
export type { ModeHandlers, Pipeline, StageName, StageResult, StageStep, StepStage } from "../pipeline/pipeline.ts";
export type { EndStep, Principal, RequestContext, RequestMode, RequestOrigin, RequestState, RequestVars } from "../pipeline/context.ts";
export type { ClientGone } from "../proxy/client-gone.ts";
export type { CallerModels, JobTarget, PathMatch, Registry, Resolution, SyncRequestLine } from "../registry/registry.ts";
export type { ModelAccess, ModelRule } from "../registry/model-access.ts";

// A request mode: the sync route hands a resolved request to the first registered mode that accepts it.
export type { SyncBody, SyncMode, SyncModes } from "../proxy/modes.ts";
// The admin token: which `/-/*` routes it guards and whether a request carries it.
export type { AdminAccess } from "../admin/access.ts";

// What `setup` is handed: stores, clock, log, metrics, the config.
export type { AtomicOp, EvictableUsage, KvData, KvReply, KvStore, ListEnd, ScanPage } from "../stores/kv.ts";
export type { ObjectInfo, ObjectStore, PutOptions, StoredObject } from "../stores/objects.ts";
export type { Clock, IdSource } from "../clock.ts";
export type { LogEntry, LogFields, Logger, LogLevel } from "../log.ts";
export type { CounterSpec, HistogramSpec, Metrics, MetricsSnapshot } from "../metrics.ts";
export type {
  BackendConfig,
  ConfigFacts,
  ConfigSection,
  ConfigSections,
  CoreConfig,
  GatewayConfig,
  SectionFieldSet,
  ServiceConfig,
  ServiceFields,
  ServiceFieldSet,
} from "../config/schema.ts";
export { fieldsOf } from "../config/schema.ts";

// The contracts of the built-in services a plugin may `use` (typed by declaration merging), and of the core's events.
export type {
  ClaimedJob,
  FinishFields,
  JobAccepted,
  JobListQuery,
  JobLookup,
  JobPage,
  JobRecord,
  JobStatus,
  JobStore,
  SubmissionHook,
  Transition,
} from "../jobs/types.ts";
export type { JobKeys } from "../jobs/keys.ts";
export type { LlmUsageEvent } from "../llm/usage.ts";
export type { BudgetHold } from "../limits/budget-hold.ts";
export type { SpanAttributes, Tracing, WorkSpan } from "../telemetry/tracing.ts";
export type { CredentialLimits, LimitWindow, LimitWindows } from "../limits/windows.ts";
export type { CachedAnswer, CacheLookup, CacheRequest, PendingLookup, ResponseCache } from "../llm/cache.ts";
export type { PricedUsage, PriceQuery, Pricing } from "../pricing/price.ts";
export type { AttemptResult, BackendHealth, FailoverRoute, RetryRounds } from "../proxy/backend-health.ts";
export type { BackendTarget } from "../proxy/backends.ts";
export type { Bytes } from "../llm/json.ts";
export type { AuthMode, CallerAuth } from "../pipeline/caller-auth.ts";
