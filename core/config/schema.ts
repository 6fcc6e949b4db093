/**
 * The configuration schema: every object of spec sections 2.8 and 2.9 with the spec's
 * defaults. docs/configuration.md's reference follows this file; keep them in step.
 *
 * Durations are Go-style strings (see duration.ts) kept as strings here and converted
 * with `durationMs` where they are used.
 */
import { FormatRegistry, Type, type Static, type TSchema } from "@sinclair/typebox";
import { parseDuration } from "./duration.ts";

FormatRegistry.Set("duration", (value) => typeof value === "number" || typeof parseDuration(value) === "number");

const Duration = (defaultValue: string, description: string) =>
  Type.String({ format: "duration", default: defaultValue, description });

const StringMap = (description: string) =>
  Type.Record(Type.String(), Type.String(), { default: {}, description });

const StringList = (description: string) => Type.Array(Type.String(), { default: [], description });

const Section = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description: string) =>
  Type.Object(properties, { default: {}, additionalProperties: false, description });

export const BackendSchema = Type.Object(
  {
    url: Type.String({ minLength: 1, description: "Backend base address; the request path is appended" }),
    weight: Type.Integer({ minimum: 0, default: 1, description: "0 = fallback only; > 0 = eligible as primary" }),
    model: Type.String({ default: "", description: "Overrides the service's backend_model for this backend" }),
    headers: StringMap("Overrides inference_headers for this backend (values env-expanded)"),
  },
  { additionalProperties: false },
);

export const TokenLimitSchema = Type.Object(
  {
    token_rate: Type.Integer({ minimum: 0, default: 0, description: "Prompt + completion tokens per window; 0 = off" }),
    token_period: Duration("1m", "Token window"),
  },
  { additionalProperties: false, default: {} },
);

/**
 * Retries of a failed async job attempt (a transient failure: network error, timeout, or a
 * status listed in on_statuses). max_attempts 1 is the spec's behaviour: no retry.
 */
export const RetrySchema = Type.Object(
  {
    max_attempts: Type.Integer({ minimum: 1, default: 1, description: "Attempts in total, the first included; 1 = no retry" }),
    backoff: Duration("1s", "Delay before the first retry, doubled on each further one"),
    max_backoff: Duration("30s", "Cap on the delay, a backend's Retry-After included"),
    on_statuses: Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), {
      default: [429, 500, 502, 503, 504],
      description: "Backend statuses that are retried (network errors and timeouts always are)",
    }),
  },
  { additionalProperties: false, default: {} },
);

export const ServiceSchema = Type.Object(
  {
    type: Type.String({ minLength: 1, description: "Service type, used in /jobs/{service_type}" }),
    model: Type.String({ default: "", description: "Client-facing model alias" }),
    default: Type.Boolean({ default: false, description: "Fallback model when a request omits model" }),
    operations: Type.Record(Type.String(), Type.Array(Type.String({ pattern: "^/" })), {
      default: {},
      description: "Operation name -> URL paths (a path may end in /* or contain {model})",
    }),
    inference_url: Type.String({ default: "", description: "Single backend base address" }),
    backends: Type.Array(BackendSchema, { default: [], description: "Weighted backends; take precedence over inference_url" }),
    accepted_exts: StringList("Allowed upload extensions for async jobs (empty = any)"),
    max_file_size_mb: Type.Number({ exclusiveMinimum: 0, default: 100, description: "Max async upload size in MB" }),
    inference_headers: StringMap("Headers injected on every sync and LLM backend request"),
    provider: Type.String({ default: "", description: "LLM provider; activates the LLM proxy" }),
    backend_model: Type.String({ default: "", description: "Rewrites the model field sent to backends" }),
    response_cache_ttl: Type.Integer({ minimum: 0, default: 0, description: "LLM response cache seconds; 0 = off" }),
    max_concurrent_sync: Type.Integer({ minimum: 0, default: 0, description: "Cluster-wide sync concurrency cap; 0 = unlimited" }),
    priority_reserved_sync: Type.Integer({ minimum: 0, default: 0, description: "Slots of max_concurrent_sync reserved for priority requests" }),
    token_limits: Type.Record(Type.String(), TokenLimitSchema, { default: {}, description: "Per user type token budgets for this model" }),
    swagger_url: Type.String({ default: "", description: "Address of the backend's OpenAPI spec" }),
    swagger_headers: StringMap("Headers for fetching swagger_url"),
    deprecated: Type.Boolean({ default: false, description: "Informational; routing is unchanged" }),
    retry: RetrySchema,
    visibility: Type.Optional(
      Type.Object(
        { user_types: StringList("User types in the audience"), groups: StringList("Principal groups in the audience") },
        { additionalProperties: false, description: "Audience gate; absent = public" },
      ),
    ),
  },
  { additionalProperties: false },
);

export const RateLimitSchema = Type.Object(
  {
    rate: Type.Integer({ minimum: 0, default: 0, description: "Requests per period; 0 = unlimited" }),
    period: Duration("1m", "Request window"),
    token_rate: Type.Integer({ minimum: 0, default: 0, description: "LLM tokens per token_period; 0 = off" }),
    token_period: Duration("1m", "Token window"),
    max_concurrent: Type.Integer({ minimum: 0, default: 0, description: "Pending + processing async jobs; 0 = off" }),
    processing_time: Type.Integer({ minimum: 0, default: 0, description: "Inference seconds per processing_period; 0 = off" }),
    processing_period: Duration("1h", "Processing-time window"),
  },
  { additionalProperties: false, default: {} },
);

const PolicyRuleSchema = Type.Object(
  {
    match: Type.Object(
      {
        groups: StringList("Any of these groups"),
        roles: StringList("Any of these roles"),
        scopes: StringList("Any of these scopes"),
        consumers: StringList("Exactly one of these consumers"),
        user_types: StringList("Exactly one of these user types"),
      },
      { default: {}, additionalProperties: false },
    ),
    allow_models: StringList("Globs against the model alias"),
    allow_service_types: StringList("Globs against the service type (empty = any)"),
    limits: Type.Optional(
      Type.Object(
        {
          rate: Type.Integer({ minimum: 0, default: 0 }),
          period: Duration("1m", "Request window"),
          token_rate: Type.Integer({ minimum: 0, default: 0 }),
          token_period: Duration("1m", "Token window"),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const GatewayConfigSchema = Type.Object(
  {
    server: Section(
      {
        addr: Type.String({ default: ":8080", description: "Listen address, host:port or :port" }),
        read_timeout: Duration("120s", "Max time to read a request"),
        write_timeout: Duration("0s", "Max time to write a response; 0 = none"),
        idle_timeout: Duration("120s", "Keep-alive idle timeout"),
        backend_timeout: Duration("300s", "Max wait for a backend's response headers (sync and LLM proxy)"),
        max_body_mb: Type.Number({ minimum: 0, default: 1, description: "Sync JSON body cap in MiB; 0 = 1" }),
        consumer_header: Type.String({ default: "", description: "Header naming the consumer; empty = off" }),
        priority_header: Type.String({ default: "", description: "Header marking priority requests; empty = off" }),
        user_type_header: Type.String({ default: "", description: "Header carrying the user type; empty = off" }),
      },
      "HTTP server",
    ),
    metrics: Section(
      {
        top_consumers: Type.Integer({ minimum: 0, default: 0, description: "Size of the top-consumer token gauge; 0 = off" }),
        consumer_labels: Type.Boolean({ default: false, description: "Consumer label on svc_jobs_by_consumer_total (fewer than 50 consumers)" }),
        default_metrics: Type.Boolean({ default: true, description: "Process and runtime series (process_*, nodejs_*) on /metrics" }),
      },
      "Prometheus metrics",
    ),
    rate_limits: Type.Record(Type.String(), Type.Record(Type.String(), RateLimitSchema, { default: {} }), {
      default: {},
      description: "service_type -> user_type (or \"*\") -> limits",
    }),
    redis: Section(
      {
        addr: Type.String({ default: "", description: "host:port or redis:// URL; empty = embedded in-memory store" }),
        password: Type.String({ default: "" }),
        db: Type.Integer({ minimum: 0, default: 0 }),
        pending_max_age: Duration("", "Stale-pending sweep age; empty or 0s = off"),
        command_timeout: Duration(
          "500ms",
          "Longest wait for one Redis reply; past it the command fails like a store error (limits fail open, jobs 503). Short because a limit check runs on every request",
        ),
        embedded_cache_max_mb: Type.Number({
          minimum: 0,
          default: 64,
          description: "Embedded store only: memory cap of the cached LLM answers in MiB, least recently used dropped first; 0 = no cap",
        }),
      },
      "Key-value store",
    ),
    object_store: Section(
      {
        endpoint: Type.String({ default: "", description: "S3 endpoint; empty = files under dir" }),
        region: Type.String({ default: "us-east-1" }),
        access_key: Type.String({ default: "" }),
        secret_key: Type.String({ default: "" }),
        bucket: Type.String({ default: "gateway" }),
        dir: Type.String({ default: "./data/objects", description: "Directory of the embedded file store" }),
        encryption: Section(
          { key: Type.String({ default: "", description: "64 hex chars (AES-256-GCM); empty = off" }) },
          "Encryption at rest",
        ),
      },
      "Object store",
    ),
    lifecycle: Section(
      {
        persists_result: Type.Boolean({ default: false, description: "false = record and result deleted after first consumption" }),
        job_ttl: Section(
          {
            global: Duration("", "Fallback TTL for every status"),
            completed: Duration("", "TTL of completed jobs"),
            pending: Duration("", "TTL of pending jobs"),
            failed: Duration("", "TTL of failed jobs"),
          },
          "Job record TTLs (2h safety net when all empty)",
        ),
        gc: Section(
          {
            enabled: Type.Boolean({ default: false }),
            interval: Duration("15m", "GC tick"),
            orphan_min_age: Duration("5m", "Min age of an orphan object before deletion"),
            max_reap_attempts: Type.Integer({ minimum: 0, default: 3 }),
          },
          "Background GC",
        ),
      },
      "Job lifecycle",
    ),
    webhooks: Section(
      {
        max_retries: Type.Integer({ minimum: 1, default: 3, description: "Total attempts including the first" }),
        retry_backoff: Duration("30s", "First retry delay, doubled each retry"),
        max_backoff: Duration("10m", "Retry delay cap"),
        signing_secret: Type.String({ default: "", description: "HMAC-SHA256 secret for X-Svc-Signature; empty = unsigned" }),
        timeout: Duration("10s", "Per-attempt timeout"),
        allow_private_networks: Type.Boolean({ default: false, description: "Allow loopback/private callback targets" }),
      },
      "Job webhooks",
    ),
    jobs: Section(
      {
        idempotency_ttl: Duration("24h", "Idempotency-Key retention"),
        expired_marker_ttl: Duration("168h", "Tombstone retention (410 answers)"),
      },
      "Async jobs",
    ),
    usage: Section({ retention: Duration("", "Usage key retention; empty = all-time") }, "Usage tracking"),
    policies: Type.Optional(
      Type.Object(
        {
          default: Type.Union([Type.Literal("deny"), Type.Literal("allow")], { default: "deny" }),
          rules: Type.Array(PolicyRuleSchema, { default: [] }),
        },
        { additionalProperties: false, description: "Access policies (needs auth.mode)" },
      ),
    ),
    auth: Section(
      {
        mode: Type.Union([Type.Literal("none"), Type.Literal("proxy"), Type.Literal("oauth2")], { default: "none" }),
        proxy: Section(
          {
            groups_header: Type.String({ default: "" }),
            roles_header: Type.String({ default: "" }),
            scopes_header: Type.String({ default: "" }),
          },
          "Identity headers injected upstream (comma-separated)",
        ),
        oauth2: Section(
          {
            issuer: Type.String({ default: "" }),
            audience: Type.String({ default: "" }),
            jwks_url: Type.String({ default: "" }),
            keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { default: [], description: "Inline JWKs" }),
            clock_skew: Duration("30s", "Accepted clock skew"),
            claims: Section(
              {
                consumer: Type.String({ default: "sub" }),
                user_type: Type.String({ default: "" }),
                groups: Type.String({ default: "groups" }),
                roles: Type.String({ default: "roles" }),
                scopes: Type.String({ default: "scope" }),
              },
              "Claim names",
            ),
          },
          "Bearer JWT verification",
        ),
      },
      "Caller identity",
    ),
    audit_log: Section({ enabled: Type.Boolean({ default: false }) }, "Audit log (hot-reloadable)"),
    opentelemetry: Section(
      {
        enabled: Type.Boolean({ default: false }),
        service_name: Type.String({ default: "svc/gateway" }),
        exporter: Section(
          {
            endpoint: Type.String({ default: "" }),
            insecure: Type.Boolean({ default: false }),
            headers: StringMap("Exporter headers"),
          },
          "OTLP/HTTP exporter",
        ),
        traces: Section(
          {
            enabled: Type.Boolean({ default: true }),
            sample_ratio: Type.Number({ minimum: 0, maximum: 1, default: 1 }),
            ignore_paths: Type.Array(Type.String(), { default: ["/health", "/metrics", "/docs", "/openapi.yaml"] }),
          },
          "Traces",
        ),
        metrics: Section({ enabled: Type.Boolean({ default: false }), interval: Duration("60s", "Export interval") }, "Metrics export"),
        logs: Section({ enabled: Type.Boolean({ default: false }) }, "Logs export"),
      },
      "OpenTelemetry export",
    ),
    plugins: Type.Object(
      { load: Type.Array(Type.String(), { default: [], description: "Paths of user plugin modules" }) },
      { default: {}, additionalProperties: Type.Boolean(), description: "NAME: false turns a plugin off" },
    ),
    relay: Section(
      {
        embedded: Type.Optional(Type.Boolean({ description: "Run the relay inside the gateway (default: true on the embedded store)" })),
        concurrency: Type.Integer({ minimum: 1, default: 4, description: "Jobs processed in parallel per process" }),
        lease_seconds: Type.Integer({ minimum: 1, default: 60, description: "Lease of a job being processed; renewed while the backend works" }),
        request_timeout: Duration("10m", "Max time for one inference call"),
        metrics_addr: Type.String({
          default: "",
          description: "Where a standalone relay process (npm run relay) serves GET /metrics and GET /health, host:port or :port; \"\" = no listener",
        }),
      },
      "Relay worker",
    ),
    services: Type.Array(ServiceSchema, { default: [] }),
  },
  { additionalProperties: false },
);

export type GatewayConfig = Static<typeof GatewayConfigSchema>;
export type ServiceConfig = Static<typeof ServiceSchema>;
export type BackendConfig = Static<typeof BackendSchema>;
export type RateLimitConfig = Static<typeof RateLimitSchema>;
export type TokenLimitConfig = Static<typeof TokenLimitSchema>;

/** A top-level section a plugin adds to the file, validated by the plugin's own schema. */
export interface ConfigSection {
  key: string;
  schema: TSchema;
}
