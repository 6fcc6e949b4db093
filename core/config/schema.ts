/**
 * The core's part of the configuration schema (spec sections 2.8 and 2.9, with the spec's
 * defaults): the HTTP server, the stores, the Prometheus endpoint, the plugin switches, and
 * the fields of a service that the core itself reads (routing, backends, the catalogue).
 *
 * Every feature's settings live with its plugin: a plugin declares a top-level `section` and
 * may add per-service fields (`serviceFields`); load.ts validates the core schema and every
 * declared part in one pass. The types of the built-in sections join `GatewayConfig` by
 * declaration merging of `ConfigSections` and `ServiceFields` (see plugins/<name>/config.ts).
 * docs/config-reference.md is generated from these schemas (`npm run docs:config`).
 */
import { Type, type Static, type TObject, type TSchema } from "@sinclair/typebox";
import { Duration, Section, StringMap } from "./schema-parts.ts";

export const BackendSchema = Type.Object(
  {
    url: Type.String({ minLength: 1, description: "Backend base address; the request path is appended" }),
    weight: Type.Integer({ minimum: 0, default: 1, description: "0 = fallback only; > 0 = eligible as primary" }),
    model: Type.String({ default: "", description: "Overrides the service's backend_model for this backend" }),
    headers: StringMap("Overrides inference_headers for this backend (values env-expanded)"),
  },
  { additionalProperties: false },
);

/**
 * The service fields the core reads: the registry resolves `type`/`model`/`default`/`operations`
 * and the mode (`provider` set = an LLM service, read by routing, the model list and usage);
 * the proxy core picks `backends`/`inference_url` and sends `backend_model`/`inference_headers`;
 * `deprecated` is catalogue data shown by the model list and the API docs alike.
 */
export const CoreServiceSchema = Type.Object(
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
    inference_headers: StringMap("Headers injected on every sync and LLM backend request"),
    provider: Type.String({ default: "", description: "LLM provider; activates the LLM proxy" }),
    backend_model: Type.String({ default: "", description: "Rewrites the model field sent to backends" }),
    deprecated: Type.Boolean({ default: false, description: "Informational; routing is unchanged" }),
  },
  { additionalProperties: false },
);

export const CoreConfigSchema = Type.Object(
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
    plugins: Type.Object(
      { load: Type.Array(Type.String(), { default: [], description: "Paths of user plugin modules" }) },
      { default: {}, additionalProperties: Type.Boolean(), description: "NAME: false turns a plugin off" },
    ),
    services: Type.Array(CoreServiceSchema, { default: [] }),
  },
  { additionalProperties: false },
);

/**
 * The top-level sections the built-in plugins declare, by declaration merging:
 *
 *   declare module "../../core/config/schema.ts" {
 *     interface ConfigSections { webhooks: WebhooksConfig }
 *   }
 */
// deno-lint-ignore no-empty-interface
export interface ConfigSections {}

/** The per-service fields the built-in plugins declare (`services[i].retry`, ...), merged the same way. */
// deno-lint-ignore no-empty-interface
export interface ServiceFields {}

export type CoreConfig = Static<typeof CoreConfigSchema>;
export type BackendConfig = Static<typeof BackendSchema>;
export type ServiceConfig = Static<typeof CoreServiceSchema> & ServiceFields;
export type GatewayConfig = Omit<CoreConfig, "services"> & ConfigSections & { services: ServiceConfig[] };

/** A top-level section a plugin adds to the file, validated by the plugin's own schema. */
export interface ConfigSection<S extends TSchema = TSchema> {
  key: string;
  schema: S;
  /**
   * Rules the schema cannot say (a field against another, or against another section): each
   * problem starts with its path (`webhooks.timeout: ...`). Runs on the defaulted config, also
   * when the file has shape errors; a problem on a path the schema already reported is dropped.
   */
  validate?(section: Static<S>, config: GatewayConfig): string[];
  /** Keys of the section that a hot reload cannot apply (a listener): a change logs `reload_needs_restart`. */
  restartOnly?: readonly string[];
}

/** Fields a plugin adds to every `services[i]` (an object schema whose properties join the service's). */
export interface ServiceFieldSet<S extends TObject = TObject> {
  schema: S;
  /** Like `ConfigSection.validate`, per service; `at` is its path (`services[2]`). */
  validate?(service: ServiceConfig, at: string, config: GatewayConfig): string[];
}
