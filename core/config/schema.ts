/**
 * The core's part of the configuration schema (docs/design.md#services and
 * docs/design.md#other-settings, with their defaults): the HTTP server, the stores, the Prometheus
 * endpoint, the plugin switches, and the fields of a service that the core itself reads (routing,
 * backends, the catalogue).
 *
 * Every feature's settings live with its plugin: a plugin declares a top-level `section`, may
 * add per-service fields (`serviceFields`) and fields to a section it does not own
 * (`sectionFields`: `metrics.top_consumers` is the LLM proxy's); load.ts validates the core
 * schema and every declared part in one pass. The types of the built-in sections join
 * `GatewayConfig` by declaration merging of `ConfigSections` and `ServiceFields` (see
 * plugins/<name>/config.ts); added section fields are read through `fieldsOf`. The core
 * reads none of them. docs/config-reference.md is generated from these schemas
 * (`npm run docs:config`).
 */
import { type Static, type TObject, type TSchema, Type } from "@sinclair/typebox";
import { Duration, Section, StringMap } from "./schema-parts.ts";

export const BackendSchema = Type.Object(
  {
    url: Type.String({
      default: "",
      description:
        "Backend base address (http:// or https://); the request path is appended. May be omitted when the backend's provider has a default address (openai, anthropic, groq, ...) or builds it from the settings below (bedrock, vertex_ai, azure_openai)",
    }),
    weight: Type.Integer({ minimum: 0, default: 1, description: "0 = fallback only; > 0 = eligible as primary, picked at random in proportion to the weight" }),
    model: Type.String({ default: "", description: "Overrides the service's backend_model for this backend" }),
    headers: StringMap("Overrides inference_headers for this backend (values env-expanded)"),
    provider: Type.String({
      default: "",
      description: "The LLM provider (protocol) of this backend; empty = the service's provider. Backends of one model may speak different protocols",
    }),
    api_key: Type.String({
      default: "",
      description: "The backend's key, sent as its provider expects (Authorization, x-api-key, api-key, x-goog-api-key); env-expanded",
    }),
    region: Type.String({ default: "", description: "bedrock: the AWS region (e.g. us-east-1)" }),
    project: Type.String({ default: "", description: "vertex_ai: the Google Cloud project" }),
    location: Type.String({ default: "", description: "vertex_ai: the location (us-central1, europe-west4, global, ...)" }),
    credentials_file: Type.String({
      default: "",
      description: "vertex_ai: a service-account key file (empty: Application Default Credentials, the metadata server included)",
    }),
    resource: Type.String({ default: "", description: "azure_openai: the resource name (https://{resource}.openai.azure.com), unless url is set" }),
    deployment: Type.String({ default: "", description: "azure_openai: the deployment name (the URL's /openai/deployments/{deployment})" }),
    api_version: Type.String({ default: "", description: "azure_openai: the api-version query parameter (default 2024-10-21)" }),
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
    model: Type.String({ default: "", description: "Client-facing model alias, unique per service type" }),
    default: Type.Boolean({ default: false, description: "Fallback model when a request omits model (at most one per service type)" }),
    operations: Type.Record(Type.String(), Type.Array(Type.String({ pattern: "^/" })), {
      default: {},
      description:
        "Operation name -> URL paths, each starting with /; a path may end in /* (everything under the prefix; exact paths win) or contain {model} (the model comes from that path segment)",
    }),
    inference_url: Type.String({
      default: "",
      description: "Single backend base address (http:// or https://); the request path is appended; empty with a provider = the provider's default address",
    }),
    backends: Type.Array(BackendSchema, { default: [], description: "Weighted backends; take precedence over inference_url" }),
    inference_headers: StringMap(
      "Headers injected on every sync and LLM backend request (values env-expanded); they override same-named client headers. Not sent for async jobs",
    ),
    provider: Type.String({
      default: "",
      description:
        "LLM provider of the service's backends (built in: openai, azure_openai, anthropic, bedrock, gemini, vertex_ai, groq, mistral, together, deepseek, openrouter, fireworks, ollama, vllm, chat_completions, messages_api, local_chat, passthrough); activates the LLM proxy. Empty while a backend sets one: the first backend's",
    }),
    backend_model: Type.String({ default: "", description: "Rewrites the model field sent to backends" }),
    deprecated: Type.Boolean({ default: false, description: "Informational (shown in the model list and the API docs); routing is unchanged" }),
  },
  {
    additionalProperties: false,
    notes: "A model alias appears once per service type, and at most one service per type has `default: true`. Every " +
      "operation has at least one path. Once the plugins are set up, each " +
      "`provider` must name a registered provider (the start or reload refusal lists the registered ones).",
  },
);

export const CoreConfigSchema = Type.Object(
  {
    server: Section(
      {
        addr: Type.String({
          default: ":8080",
          description:
            "Listen address, host:port or :port (all interfaces, IPv6 and IPv4, on both runtimes); the GATEWAY_ADDR and PORT environment variables override it",
        }),
        read_timeout: Duration("120s", "Max time to read a request (Node only; past it: 408)"),
        write_timeout: Duration("0s", "Max time to write a response; 0 = none (Node only)"),
        idle_timeout: Duration("120s", "Keep-alive idle timeout (Node only)"),
        backend_timeout: Duration(
          "300s",
          "Max wait for a backend's response headers (sync and LLM proxy); for a non-streaming LLM answer, also the max time to read its body after the headers",
        ),
        max_body_mb: Type.Number({ minimum: 0, default: 1, description: "Sync JSON body cap in MiB; 0 = 1" }),
        consumer_header: Type.String({
          default: "",
          description: "Header naming the consumer; empty = off, and so are usage, per-consumer limits and GET /jobs. Sent blank or twice: 400",
        }),
        priority_header: Type.String({
          default: "",
          description: "Header marking priority requests (present = priority, whatever its value); empty = off. Sent twice: 400",
        }),
        user_type_header: Type.String({ default: "", description: "Header carrying the user type; empty = off. Sent blank or twice: 400" }),
        workers: Type.Union([Type.Integer({ minimum: 1 }), Type.Literal("auto")], {
          default: 1,
          description:
            'Gateway processes sharing the listener: a number, or "auto" = the available CPU cores; above 1 needs Redis (redis.addr, sentinel or cluster). Read at start; not for a standalone relay',
        }),
      },
      "HTTP server",
      "`read_timeout`, `write_timeout` and `idle_timeout` are applied by the Node server; the Deno server does not use them. " +
        "On Node a request not received within `read_timeout` (its headers within 60 s, or `read_timeout` if shorter; `0s` " +
        "leaves only the 60 s for the headers) is answered 408 with the error body; the limits are checked every second. " +
        "Identity headers sent blank or twice: see [Identity headers as sent](access-control.md#identity-headers-as-sent). " +
        "`workers`: see [Several workers on one machine](deployment.md#several-workers-on-one-machine).",
    ),
    metrics: Section(
      {
        default_metrics: Type.Boolean({
          default: true,
          description: "Process and runtime series (process_*, nodejs_*) on /metrics, a standalone relay's too; hot-reloadable",
        }),
      },
      "Prometheus metrics",
      "See [Process and runtime metrics](operations.md#process-and-runtime-metrics) for `default_metrics`.",
    ),
    redis: Section(
      {
        addr: Type.String({
          default: "",
          description: "One Redis: host:port or a redis:// or rediss:// URL; empty (and no sentinel or cluster) = embedded in-memory store",
        }),
        sentinel: Section(
          {
            master_name: Type.String({
              default: "",
              description: "The name the sentinels monitor the primary under (`sentinel monitor NAME ...`); required with addrs",
            }),
            addrs: Type.Array(Type.String(), {
              default: [],
              description:
                "Sentinels, host:port each (three or more; an entry may hold several, comma-separated; empty entries are ignored); set = Sentinel mode",
            }),
            username: Type.String({ default: "", description: "ACL user for the sentinels themselves; empty = none" }),
            password: Type.String({
              default: "",
              description: "Password of the sentinels themselves (`requirepass` in sentinel.conf); empty = none. The primary's is redis.password",
            }),
          },
          "Redis Sentinel",
        ),
        cluster: Section(
          {
            addrs: Type.Array(Type.String(), {
              default: [],
              description:
                "Some cluster nodes, host:port each (the rest are discovered; an entry may hold several, comma-separated; empty entries are ignored); set = Cluster mode",
            }),
          },
          "Redis Cluster",
        ),
        username: Type.String({ default: "", description: "Redis ACL user (all modes); empty = the default user" }),
        password: Type.String({ default: "", description: "Redis password (all modes)" }),
        db: Type.Integer({ minimum: 0, default: 0, description: "Redis database number (one Redis and Sentinel; a cluster has only 0)" }),
        tls: Section(
          {
            enabled: Type.Boolean({ default: false, description: "TLS to every Redis node (and sentinel); a rediss:// addr turns it on too" }),
            ca_file: Type.String({ default: "", description: "PEM file of the CA that signed the Redis certificates; empty = the system CAs" }),
            server_name: Type.String({ default: "", description: "Name the certificates are checked against; empty = each node's host" }),
          },
          "TLS to Redis",
        ),
        command_timeout: Duration(
          "500ms",
          "Longest wait for one Redis reply, read at start; past it the command fails like a store error (limit checks fail open, job submissions and readiness 503). Must be positive",
        ),
      },
      "Key-value store",
      "`command_timeout` is short because a limit check runs on every request that carries a consumer: a frozen Redis then " +
        "costs the requests in flight at most this, and later ones nothing (see [Running on Redis + S3](deployment.md#running-on-redis--s3)). " +
        "Set at most one of `addr`, `sentinel.addrs` and `cluster.addrs`; see [Scale-out: Sentinel and Cluster](scale-out.md).",
    ),
    object_store: Section(
      {
        endpoint: Type.String({ default: "", description: "S3 endpoint; empty = files under dir" }),
        region: Type.String({ default: "us-east-1", description: "S3 region" }),
        access_key: Type.String({ default: "", description: "S3 access key; empty with secret_key empty = the S3 client's default credential chain" }),
        secret_key: Type.String({ default: "", description: "S3 secret key" }),
        bucket: Type.String({ default: "gateway", description: "S3 bucket, created at start when missing" }),
        dir: Type.String({ default: "./data/objects", description: "Directory of the embedded file store" }),
        encryption: Section(
          { key: Type.String({ default: "", description: "64 hex characters (32 bytes): AES-256-GCM at rest; empty = off. Same key for gateway and relay" }) },
          "Encryption at rest",
        ),
      },
      "Object store",
    ),
    plugins: Type.Object(
      { load: Type.Array(Type.String(), { default: [], description: "Paths of your own plugin modules, relative to the config file's directory" }) },
      { default: {}, additionalProperties: Type.Boolean(), description: "NAME: false turns the plugin NAME off (any other key must be a boolean)" },
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

/**
 * What a plugin's settings tell other plugins' config rules, by declaration merging:
 *
 *   declare module "../../core/config/schema.ts" {
 *     interface ConfigFacts { pricingOn: boolean }
 *   }
 *
 * The file is validated before any plugin is set up, so a rule cannot `use` another plugin's
 * service; it reads the facts that plugin states (`facts` of its section or field set), never
 * that plugin's settings. A fact is absent when no installed plugin states it.
 */
// deno-lint-ignore no-empty-interface
export interface ConfigFacts {}

/** A top-level section a plugin adds to the file, validated by the plugin's own schema. */
export interface ConfigSection<S extends TSchema = TSchema> {
  key: string;
  schema: S;
  /**
   * Rules the schema cannot say (a field against another, or against the core's settings or
   * other plugins' `facts`): each problem starts with its path (`webhooks.timeout: ...`). Runs
   * on the defaulted config, also when the file has shape errors; a problem on a path the
   * schema already reported is dropped.
   */
  validate?(section: Static<S>, config: GatewayConfig, facts: Partial<ConfigFacts>): string[];
  /** What this section tells other plugins' rules (see `ConfigFacts`). */
  facts?(section: Static<S>): Partial<ConfigFacts>;
  /** Keys of the section that a hot reload cannot apply (a listener): a change logs `reload_needs_restart`. */
  restartOnly?: readonly string[];
}

/** Fields a plugin adds to every `services[i]` (an object schema whose properties join the service's). */
export interface ServiceFieldSet<S extends TObject = TObject> {
  schema: S;
  /** Like `ConfigSection.validate`, per service; `at` is its path (`services[2]`). */
  validate?(service: ServiceConfig, at: string, config: GatewayConfig, facts: Partial<ConfigFacts>): string[];
}

/**
 * Fields a plugin adds to a section it does not own: one of the core's (`metrics`, `redis`) or
 * another plugin's (`llm`). The setting keeps its path in the file, and the plugin that uses it
 * owns it: it declares, validates and reads it (with `fieldsOf`); nobody else reads it.
 */
export interface SectionFieldSet<S extends TObject = TObject> {
  /** The section's top-level key; when no installed plugin declares that section, it holds these fields alone. */
  section: string;
  /** An object schema whose properties join the section's (every one with a default). */
  schema: S;
  /** Like `ConfigSection.validate`, on these fields (problems start with `section.field`). */
  validate?(fields: Static<S>, config: GatewayConfig, facts: Partial<ConfigFacts>): string[];
  /** What these fields tell other plugins' rules (see `ConfigFacts`). */
  facts?(fields: Static<S>): Partial<ConfigFacts>;
  /** Fields a hot reload cannot apply: a change logs `reload_needs_restart` with `section.field`. */
  restartOnly?: readonly string[];
}

/** A plugin's own fields in a section it does not own (see `SectionFieldSet`), defaulted and validated. */
export function fieldsOf<S extends TObject>(config: GatewayConfig, set: SectionFieldSet<S>): Static<S> {
  return (config as unknown as Record<string, Static<S>>)[set.section];
}
