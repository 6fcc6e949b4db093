/**
 * Turns config text into a validated, defaulted, frozen `GatewayConfig`, or into the
 * complete list of problems, each prefixed with its path (`services[2].backends[0].url: required`).
 */
import { Type, type TSchema } from "@sinclair/typebox";
import { Value, type ValueError, ValueErrorType } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { listenAddressProblem, parseListenAddress } from "./addr.ts";
import { durationMs, formatDuration, parseDuration } from "./duration.ts";
import { expandEnv, type Env } from "./env.ts";
import { ConfigError } from "../errors.ts";
import { GatewayConfigSchema, type ConfigSection, type GatewayConfig } from "./schema.ts";

export type ConfigResult =
  | { ok: true; config: GatewayConfig; extra: Readonly<Record<string, unknown>> }
  | { ok: false; problems: string[] };

/** Parses YAML and expands `${VAR}` references. Throws with a message naming the line on a syntax error. */
export function parseConfigText(text: string, env: Env): Record<string, unknown> {
  return parseDocument(text, env, false);
}

/**
 * The config file as the gateway reads it at start and on reload: like `parseConfigText`, but an
 * empty document (nothing, or only whitespace and comments) is refused. A file caught half-written
 * by an editor must not reload as "no services" and wipe the running config, and a start from
 * an empty file is almost certainly a mistake (write `services: []` for a gateway with none).
 */
export function parseConfigFile(text: string, env: Env): Record<string, unknown> {
  return parseDocument(text, env, true);
}

function parseDocument(text: string, env: Env, refuseEmpty: boolean): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError([yamlSyntaxProblem(error, text)]);
  }
  if (raw == null) {
    if (refuseEmpty) {
      throw new ConfigError([
        '(root): the file is empty (no YAML document, only whitespace or comments); write the configuration, at least one section such as "services: []"',
      ]);
    }
    raw = {};
  }
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(["(root): expected a mapping of sections (server:, services:, ...)"]);
  }
  return expandEnv(raw, env) as Record<string, unknown>;
}

/**
 * `line 3, column 1: YAML syntax: Sequence item without - indicator (the line reads "   model: a")`.
 * The parser's own message ends with a multi-line code frame; one line quoting the source line
 * reads the same in a terminal, a log line and a reload's JSON answer.
 */
function yamlSyntaxProblem(error: unknown, text: string): string {
  const { message, linePos } = error as { message: string; linePos?: { line: number; col: number }[] };
  const what = message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
  const at = linePos?.[0];
  if (!at) return `YAML syntax: ${what}`;
  const line = text.split(/\r?\n/)[at.line - 1] ?? "";
  const quoted = line.trim() === "" ? "" : ` (the line reads ${JSON.stringify(line)})`;
  return `line ${at.line}, column ${at.col}: YAML syntax: ${what}${quoted}`;
}

// ConfigError lives with the other coded errors (core/errors.ts); re-exported for the modules that import it from here.
export { ConfigError };

/** `/services/2/backends/0/url` -> `services[2].backends[0].url` */
export function formatPath(pointer: string): string {
  const parts = pointer.split("/").slice(1);
  let out = "";
  for (const part of parts) {
    const segment = part.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(segment) ? `[${segment}]` : out === "" ? segment : `.${segment}`;
  }
  return out || "(root)";
}

function describe(error: ValueError): string {
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "required";
    case ValueErrorType.ObjectAdditionalProperties:
      return "unknown key (check the spelling against the configuration reference)";
    case ValueErrorType.StringFormat: {
      const parsed = typeof error.value === "string" ? parseDuration(error.value) : null;
      return parsed && typeof parsed === "object" ? parsed.error : error.message;
    }
    case ValueErrorType.Union:
      if (error.schema.anyOf?.every((s: TSchema) => "const" in s)) {
        return `must be one of ${error.schema.anyOf.map((s: TSchema) => JSON.stringify(s.const)).join(", ")}, got ${JSON.stringify(error.value)}`;
      }
      return error.message;
    default:
      return `${error.message.toLowerCase()}, got ${JSON.stringify(error.value)}`;
  }
}

function schemaProblems(schema: TSchema, value: unknown, prefix = ""): string[] {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const error of Value.Errors(schema, value)) {
    const path = formatPath(prefix + error.path);
    // Missing required keys also report "expected string"; one message per path is enough.
    if (seen.has(path)) continue;
    seen.add(path);
    problems.push(`${path}: ${describe(error)}`);
  }
  return problems;
}

function isHex(text: string): boolean {
  return /^[0-9a-fA-F]*$/.test(text);
}

/** Rules that span several fields, or that a schema cannot say. */
function crossFieldProblems(config: GatewayConfig): string[] {
  const problems: string[] = [];
  // A start and a reload check the same rules: an address only the listener would refuse
  // used to pass a reload and stop the next start.
  if (typeof config.server?.addr === "string" && parseListenAddress(config.server.addr) === undefined) problems.push(listenAddressProblem("server.addr", config.server.addr));
  const metricsAddr = config.relay?.metrics_addr;
  if (typeof metricsAddr === "string" && metricsAddr !== "" && parseListenAddress(metricsAddr) === undefined) problems.push(listenAddressProblem("relay.metrics_addr", metricsAddr));
  const key = config.object_store.encryption.key;
  if (key !== "" && (key.length !== 64 || !isHex(key))) {
    problems.push(`object_store.encryption.key: must be 64 hex characters (32 bytes), got ${key.length} characters`);
  }
  if (config.policies && config.auth.mode === "none") {
    problems.push("policies: set, but auth.mode is none; set auth.mode to proxy or oauth2 (policies need an authenticated principal)");
  }
  const defaults = new Map<string, number>();
  const models = new Map<string, number>();
  config.services.forEach((service, index) => {
    const at = `services[${index}]`;
    const modelKey = `${service.type}\u0000${service.model}`;
    if (models.has(modelKey)) {
      problems.push(`${at}.model: "${service.model}" is already defined for type "${service.type}" at services[${models.get(modelKey)}]`);
    } else {
      models.set(modelKey, index);
    }
    if (service.default) {
      if (defaults.has(service.type)) {
        problems.push(`${at}.default: type "${service.type}" already has a default model at services[${defaults.get(service.type)}]`);
      } else {
        defaults.set(service.type, index);
      }
    }
    if (service.visibility?.groups.length && config.auth.mode === "none") {
      problems.push(`${at}.visibility.groups: needs auth.mode proxy or oauth2 (groups come from the authenticated principal)`);
    }
    if (service.priority_reserved_sync > service.max_concurrent_sync) {
      problems.push(`${at}.priority_reserved_sync: must not exceed max_concurrent_sync (${service.max_concurrent_sync})`);
    }
    for (const [name, paths] of Object.entries(service.operations)) {
      if (paths.length === 0) problems.push(`${at}.operations.${name}: needs at least one path`);
    }
    service.backends.forEach((backend, b) => {
      if (!/^https?:\/\//.test(backend.url)) problems.push(`${at}.backends[${b}].url: must start with http:// or https://`);
    });
    if (service.inference_url !== "" && !/^https?:\/\//.test(service.inference_url)) {
      problems.push(`${at}.inference_url: must start with http:// or https://`);
    }
    problems.push(...retryProblems(service.retry, `${at}.retry`));
  });
  for (const [type, byUserType] of Object.entries(config.rate_limits)) {
    for (const [userType, limits] of Object.entries(byUserType)) {
      const at = `rate_limits.${type}.${userType}`;
      if (limits.rate > 0 && durationMs(limits.period) === 0) problems.push(`${at}.period: must be positive when rate is set`);
      if (limits.token_rate > 0 && durationMs(limits.token_period) === 0) problems.push(`${at}.token_period: must be positive when token_rate is set`);
      if (limits.processing_time > 0 && durationMs(limits.processing_period) === 0) {
        problems.push(`${at}.processing_period: must be positive when processing_time is set`);
      }
    }
  }
  problems.push(...pendingMaxAgeProblems(config));
  problems.push(...positiveDurationProblems(config));
  return problems;
}

/**
 * Durations for which 0 has no meaning the spec gives: refused, rather than read as some
 * default or as "off" (0s used to mean 24h here, 10s there, and "no 410 phase" for the tombstone).
 */
function positiveDurationProblems(config: GatewayConfig): string[] {
  const rules: [string, string | undefined, string][] = [
    ["jobs.idempotency_ttl", config.jobs?.idempotency_ttl, 'default "24h": how long an Idempotency-Key is remembered; remove the key for the default'],
    [
      "jobs.expired_marker_ttl",
      config.jobs?.expired_marker_ttl,
      'default "168h": how long an expired job answers 410 before 404; with 0s it would never answer 410',
    ],
    ["webhooks.timeout", config.webhooks?.timeout, 'default "10s": the time one delivery attempt may take'],
    ["redis.command_timeout", config.redis?.command_timeout, 'default "500ms": the longest wait for one Redis reply; without a bound a frozen Redis would hang every request'],
  ];
  const problems: string[] = [];
  for (const [key, value, hint] of rules) {
    let ms: number;
    try {
      ms = durationMs(value);
    } catch {
      continue; // a malformed duration is already reported by the schema
    }
    if (ms <= 0) problems.push(`${key}: must be a positive duration, got ${JSON.stringify(value)} (${hint})`);
  }
  return problems;
}

/** A service's retry delays: a 0s delay would retry at once, in a tight loop against a failing backend. */
function retryProblems(retry: GatewayConfig["services"][number]["retry"] | undefined, at: string): string[] {
  if (!retry) return [];
  let backoff: number;
  let maxBackoff: number;
  try {
    backoff = durationMs(retry.backoff);
    maxBackoff = durationMs(retry.max_backoff);
  } catch {
    return []; // a malformed duration is already reported by the schema
  }
  const problems: string[] = [];
  if (backoff <= 0) problems.push(`${at}.backoff: must be a positive duration, got ${JSON.stringify(retry.backoff)} (default "1s": the delay before the first retry)`);
  if (maxBackoff <= 0) {
    problems.push(`${at}.max_backoff: must be a positive duration, got ${JSON.stringify(retry.max_backoff)} (default "30s": the longest delay between attempts)`);
  } else if (backoff > maxBackoff) {
    problems.push(`${at}.max_backoff: ${formatDuration(maxBackoff)} is shorter than backoff (${formatDuration(backoff)}); raise max_backoff or lower backoff`);
  }
  return problems;
}

/** The 2 h safety net of spec 2.9 (and 8.5) for a job record TTL nobody configured. */
const JOB_TTL_SAFETY_NET_MS = 2 * 3_600_000;

/**
 * The input object lifetime of spec 2.9: an uploaded input is kept as long as its pending
 * job record, whose TTL is `lifecycle.job_ttl.pending`, else `.global`, else the 2 h safety
 * net (the rule of plugins/async-jobs/ttl.ts; test/plugins/gc/config.test.ts holds the two
 * together).
 */
function inputObjectLifetimeMs(lifecycle: GatewayConfig["lifecycle"]): number {
  return durationMs(lifecycle.job_ttl.pending) || durationMs(lifecycle.job_ttl.global) || JOB_TTL_SAFETY_NET_MS;
}

/**
 * Spec 2.9: `redis.pending_max_age` must be shorter than the input object lifetime. At or
 * beyond it, a waiting job's record expires before the stale-pending sweep could fail it,
 * so its caller would see an expired job instead of the sweep's clear error.
 */
function pendingMaxAgeProblems(config: GatewayConfig): string[] {
  let maxAge: number;
  let lifetime: number;
  try {
    maxAge = durationMs(config.redis.pending_max_age);
    lifetime = inputObjectLifetimeMs(config.lifecycle);
  } catch {
    // A malformed duration is already reported by the schema; the other rules still run.
    return [];
  }
  if (maxAge === 0) return [];
  if (maxAge < lifetime) return [];
  return [
    `redis.pending_max_age: ${formatDuration(maxAge)} is not shorter than the input object lifetime, ${formatDuration(lifetime)} ` +
      "(the pending job TTL: lifecycle.job_ttl.pending, else lifecycle.job_ttl.global, else the 2h safety net); " +
      "lower pending_max_age or raise lifecycle.job_ttl.pending",
  ];
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/**
 * Validates parsed config. `sections` are the top-level sections plugins add; their keys
 * are accepted at the root and validated by the plugin's schema.
 */
export function validateConfig(raw: Record<string, unknown>, sections: readonly ConfigSection[] = []): ConfigResult {
  const core: Record<string, unknown> = {};
  const extra: Record<string, unknown> = {};
  const sectionByKey = new Map(sections.map((s) => [s.key, s]));
  for (const [key, value] of Object.entries(raw)) {
    if (sectionByKey.has(key)) extra[key] = value;
    else core[key] = value;
  }
  const problems: string[] = [];
  const config = Value.Default(GatewayConfigSchema, Value.Convert(GatewayConfigSchema, Value.Clone(core)));
  problems.push(...schemaProblems(GatewayConfigSchema, config));
  for (const section of sections) {
    const value = Value.Default(section.schema, Value.Convert(section.schema, Value.Clone(extra[section.key] ?? {})));
    extra[section.key] = value;
    problems.push(...schemaProblems(section.schema, value, `/${section.key}`));
  }
  // Cross-field rules also run on a file with shape errors, so one run lists as much as it can;
  // a rule that trips over a malformed value is skipped (its shape error is already listed).
  try {
    const reported = new Set(problems.map((p) => p.slice(0, p.indexOf(":"))));
    problems.push(...crossFieldProblems(config as GatewayConfig).filter((p) => !reported.has(p.slice(0, p.indexOf(":")))));
  } catch {
    // reported through the schema problems above
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, config: deepFreeze(config as GatewayConfig), extra: deepFreeze(extra) };
}

/** Parse + validate in one step; throws `ConfigError` listing every problem. */
export function loadConfig(text: string, env: Env, sections: readonly ConfigSection[] = []): { config: GatewayConfig; extra: Readonly<Record<string, unknown>> } {
  const result = validateConfig(parseConfigText(text, env), sections);
  if (!result.ok) throw new ConfigError(result.problems);
  return result;
}

export const EmptySection = Type.Object({});
