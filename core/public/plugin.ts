/**
 * The public entry point for plugin authors: `import { definePlugin } from "inference-gateway/plugin"`
 * (package.json `exports`). Everything a plugin written outside this repository needs: the
 * plugin definition and API, the provider API and its builders, the errors a plugin may
 * throw or answer with, and the types of the services and stores it is handed. Built-in
 * plugins import the same modules by relative path.
 */

// The plugin itself, and TypeBox for its config section's schema.
export { Type, type Static, type TSchema } from "@sinclair/typebox";
export {
  definePlugin,
  type BackgroundTask,
  type EventName,
  type GatewayEvents,
  type GatewayServices,
  type PinnedFetch,
  type PluginApi,
  type PluginDefinition,
  type ProcessRole,
} from "../plugins/types.ts";

// Errors: a PluginError refuses a start or reload; a GatewayError (or one of `errors`) answers a request.
export { PluginError } from "../plugins/host.ts";
export { errorResponse, errors, GatewayError, type ErrorBody, type ErrorType } from "../errors.ts";

// A custom LLM provider: its definition, its translator and the chat-completions builders.
export * from "../llm/provider.ts";

// What `setup` is handed: requests in the pipeline, stores, clock, log, metrics.
export type { StageResult, StageStep, StepStage } from "../pipeline/pipeline.ts";
export type { Principal, RequestContext, RequestMode, RequestVars } from "../pipeline/context.ts";
export type { KvStore } from "../stores/kv.ts";
export type { ObjectInfo, ObjectStore } from "../stores/objects.ts";
export type { Clock, IdSource } from "../clock.ts";
export type { Logger } from "../log.ts";
export type { Metrics } from "../metrics.ts";
export type { ConfigFacts, ConfigSection, ConfigSections, GatewayConfig, SectionFieldSet, ServiceConfig, ServiceFields, ServiceFieldSet } from "../config/schema.ts";
export { fieldsOf } from "../config/schema.ts";

// The contracts of the built-in services a plugin may `use` (typed by declaration merging).
export type { JobAccepted, JobRecord, JobStatus, JobStore, SubmissionHook } from "../jobs/types.ts";
export type { SpanAttributes, Tracing, WorkSpan } from "../telemetry/tracing.ts";
export type { LimitWindow, LimitWindows } from "../limits/windows.ts";
export type { AuthMode, CallerAuth } from "../pipeline/caller-auth.ts";
