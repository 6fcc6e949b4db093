/**
 * Turns config text into a validated, defaulted, frozen `GatewayConfig`, or into the
 * complete list of problems, each prefixed with its path (`services[2].backends[0].url: required`).
 */
import { Kind, type TObject, type TSchema, Type } from "@sinclair/typebox";
import { Value, type ValueError, ValueErrorType } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { listenAddressProblem, parseListenAddress } from "./addr.ts";
import { durationMs, parseDuration } from "./duration.ts";
import { type Env, expandEnv } from "./env.ts";
import { redisModeProblems } from "./redis-mode.ts";
import { closestKey } from "./suggest.ts";
import { ConfigError } from "../errors.ts";
import {
  type ConfigFacts,
  type ConfigSection,
  CoreConfigSchema,
  CoreServiceSchema,
  fieldsOf,
  type GatewayConfig,
  type SectionFieldSet,
  type ServiceConfig,
  type ServiceFieldSet,
} from "./schema.ts";

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

/**
 * `unknown key; did you mean "services"?` when an allowed key at that place is close to the
 * one written, else the keys allowed there, so the fix never needs a trip to the reference.
 * `rootKeys` are the top-level keys validated apart from this schema (plugins.load sections).
 */
function unknownKey(error: ValueError, rootKeys: readonly string[]): string {
  const segments = error.path.split("/");
  const written = segments[segments.length - 1].replace(/~1/g, "/").replace(/~0/g, "~");
  const allowed = [...Object.keys((error.schema as TObject).properties ?? {}), ...(segments.length === 2 ? rootKeys : [])];
  const near = closestKey(written, allowed);
  if (near !== undefined) return `unknown key; did you mean ${JSON.stringify(near)}?`;
  return allowed.length > 0 ? `unknown key; the keys allowed here: ${allowed.join(", ")}` : "unknown key; no keys are allowed here";
}

function describe(error: ValueError, rootKeys: readonly string[]): string {
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "required";
    case ValueErrorType.ObjectAdditionalProperties:
      return unknownKey(error, rootKeys);
    case ValueErrorType.StringFormat: {
      const parsed = typeof error.value === "string" ? parseDuration(error.value) : null;
      return parsed && typeof parsed === "object" ? parsed.error : error.message;
    }
    case ValueErrorType.Union:
      if (error.schema.anyOf?.every((s: TSchema) => "const" in s)) {
        return `must be one of ${error.schema.anyOf.map((s: TSchema) => JSON.stringify(s.const)).join(", ")}, got ${JSON.stringify(error.value)}`;
      }
      if (Array.isArray(error.schema.anyOf)) return `must be ${error.schema.anyOf.map(alternative).join(" or ")}, got ${JSON.stringify(error.value)}`;
      return error.message;
    default:
      return `${error.message.toLowerCase()}, got ${JSON.stringify(error.value)}`;
  }
}

/** One alternative of a union, as a problem names it: `an integer of at least 1`, `"auto"`. */
function alternative(schema: TSchema): string {
  if ("const" in schema) return JSON.stringify(schema.const);
  const least = schema.minimum === undefined ? "" : ` of at least ${schema.minimum}`;
  switch (schema[Kind]) {
    case "Integer":
      return `an integer${least}`;
    case "Number":
      return `a number${least}`;
    case "String":
      return "a string";
    case "Boolean":
      return "true or false";
    default:
      return String(schema[Kind]).toLowerCase();
  }
}

function schemaProblems(schema: TSchema, value: unknown, prefix = "", rootKeys: readonly string[] = []): string[] {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const error of Value.Errors(schema, value)) {
    const path = formatPath(prefix + error.path);
    // Missing required keys also report "expected string"; one message per path is enough.
    if (seen.has(path)) continue;
    seen.add(path);
    problems.push(`${path}: ${describe(error, rootKeys)}`);
  }
  return problems;
}

function isHex(text: string): boolean {
  return /^[0-9a-fA-F]*$/.test(text);
}

/** The core's rules that span several fields, or that a schema cannot say; plugins' rules run after (see `ConfigSection.validate`). */
function coreRuleProblems(config: GatewayConfig): string[] {
  const problems: string[] = [];
  // A start and a reload check the same rules: an address only the listener would refuse
  // used to pass a reload and stop the next start.
  if (typeof config.server?.addr === "string" && parseListenAddress(config.server.addr) === undefined) {
    problems.push(listenAddressProblem("server.addr", config.server.addr));
  }
  const key = config.object_store.encryption.key;
  if (key !== "" && (key.length !== 64 || !isHex(key))) {
    problems.push(`object_store.encryption.key: must be 64 hex characters (32 bytes), got ${key.length} characters`);
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
    for (const [name, paths] of Object.entries(service.operations)) {
      if (paths.length === 0) problems.push(`${at}.operations.${name}: needs at least one path`);
    }
    service.backends.forEach((backend, b) => {
      if (backend.url === "" && service.provider === "") {
        problems.push(`${at}.backends[${b}].url: required (only an LLM provider can give a backend its address)`);
      } else if (backend.url !== "" && !/^https?:\/\//.test(backend.url)) problems.push(`${at}.backends[${b}].url: must start with http:// or https://`);
    });
    if (service.inference_url !== "" && !/^https?:\/\//.test(service.inference_url)) {
      problems.push(`${at}.inference_url: must start with http:// or https://`);
    }
  });
  problems.push(...unreachableServiceProblems(config.services));
  problems.push(...redisModeProblems(config.redis));
  problems.push(
    ...positiveDurationProblems(
      "redis.command_timeout",
      config.redis?.command_timeout,
      'default "500ms": the longest wait for one Redis reply; without a bound a frozen Redis would hang every request',
    ),
  );
  return problems;
}

/**
 * A service without `model` (allowed, docs/design.md#services) is chosen only when a request names
 * no model (docs/design.md#model-resolution): as the only service of its type or path, or as the
 * type's default. One that is neither the only service of its type, nor the default, nor alone on
 * one of its paths can never be chosen: almost certainly a forgotten `model:`, so it is refused
 * rather than silently dead. A `{model}` path does not count: it always names a model.
 */
function unreachableServiceProblems(services: readonly ServiceConfig[]): string[] {
  const onPath = new Map<string, number>();
  const ofType = new Map<string, number>();
  for (const service of services) {
    ofType.set(service.type, (ofType.get(service.type) ?? 0) + 1);
    for (const path of new Set(Object.values(service.operations).flat())) onPath.set(path, (onPath.get(path) ?? 0) + 1);
  }
  const problems: string[] = [];
  services.forEach((service, index) => {
    if (service.model !== "" || service.default || ofType.get(service.type) === 1) return;
    const alone = Object.values(service.operations).flat().some((path) => !path.includes("{model}") && onPath.get(path) === 1);
    if (alone) return;
    problems.push(
      `services[${index}].model: missing, and type "${service.type}" has other services: a service without a model is chosen only as its type's default or as the only service on one of its paths, and this one is neither, so no request can reach it; set model (or default: true)`,
    );
  });
  return problems;
}

/**
 * A duration for which 0 has no meaning the spec gives: refused, rather than read as some
 * default or as "off" (0s used to mean 24h here, 10s there). `hint` names the default and the
 * setting's purpose. A malformed duration is no problem here: the schema already reports it.
 */
export function positiveDurationProblems(path: string, value: string | undefined, hint: string): string[] {
  let ms: number;
  try {
    ms = durationMs(value);
  } catch {
    return [];
  }
  return ms <= 0 ? [`${path}: must be a positive duration, got ${JSON.stringify(value)} (${hint})`] : [];
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/** What the file may hold beyond the core's schema: the sections and service fields plugins declare. */
export interface ConfigParts {
  /** Sections of the plugins the gateway is built with: merged into `config` (typed through `ConfigSections`). */
  sections?: readonly ConfigSection[];
  /** Sections of plugins loaded at run time (`plugins.load`): kept in `extra`, read through `api.section`. */
  extraSections?: readonly ConfigSection[];
  /** Fields added to every `services[i]`. */
  serviceFields?: readonly ServiceFieldSet[];
  /** Fields added to a section of the core or of a built-in plugin (`metrics.top_consumers`); a section nobody declares holds them alone. */
  sectionFields?: readonly SectionFieldSet[];
}

/** `section` with `fields` joined to its properties (its own options kept), or a section of `fields` alone. */
function withFields(section: TSchema | undefined, fields: SectionFieldSet): TObject {
  if (section === undefined) return Type.Object(fields.schema.properties, { default: {}, additionalProperties: false });
  if (section.type !== "object" || section.properties === undefined || section.additionalProperties !== false) {
    throw new ConfigError([`plugins: fields cannot be added to "${fields.section}", which is not a section of named keys`]);
  }
  const { properties, required: _required, type: _type, ...options } = section as TObject;
  for (const name of Object.keys(fields.schema.properties)) {
    if (name in properties) {
      throw new ConfigError([`plugins: the field "${fields.section}.${name}" is declared twice (or names the section owner's own field)`]);
    }
  }
  return Type.Object({ ...properties, ...fields.schema.properties }, options);
}

/**
 * The schema of the whole file: the core's, each merged section as a top-level key (before
 * `services`, as the file reads), the fields plugins add to sections they do not own, and the
 * service fields joined to the core's. Throws a `ConfigError` when two parts claim the same key
 * (a plugin declaration mistake).
 */
export function composeConfigSchema(parts: ConfigParts = {}): TObject {
  const { services: _services, ...coreSections } = CoreConfigSchema.properties;
  const core: Record<string, TSchema> = { ...coreSections };
  const extraKeys = new Set((parts.extraSections ?? []).map((s) => s.key));
  const taken = new Set([...Object.keys(CoreConfigSchema.properties), ...extraKeys]);
  const sections: Record<string, TSchema> = {};
  for (const section of parts.sections ?? []) {
    if (taken.has(section.key)) throw new ConfigError([`plugins: the config section "${section.key}" is declared twice (or names a core section)`]);
    taken.add(section.key);
    sections[section.key] = section.schema;
  }
  for (const fields of parts.sectionFields ?? []) {
    if (fields.section === "services") throw new ConfigError(['plugins: fields cannot be added to "services": declare them with serviceFields']);
    if (fields.section === "plugins") throw new ConfigError(['plugins: fields cannot be added to "plugins": its keys are plugin switches']);
    if (extraKeys.has(fields.section)) {
      throw new ConfigError([`plugins: fields cannot be added to "${fields.section}", the section of a plugin from plugins.load`]);
    }
    if (fields.section in core) core[fields.section] = withFields(core[fields.section], fields);
    else sections[fields.section] = withFields(sections[fields.section], fields);
  }
  const serviceProperties: Record<string, TSchema> = { ...CoreServiceSchema.properties };
  for (const fields of parts.serviceFields ?? []) {
    for (const [name, schema] of Object.entries(fields.schema.properties)) {
      if (name in serviceProperties) throw new ConfigError([`plugins: the service field "${name}" is declared twice (or names a core field)`]);
      serviceProperties[name] = schema;
    }
  }
  const service = Type.Object(serviceProperties, { additionalProperties: false });
  return Type.Object({ ...core, ...sections, services: Type.Array(service, { default: [] }) }, { additionalProperties: false });
}

/** Runs one plugin rule; a rule that trips over a malformed value is skipped (its shape error is already listed). */
function ruleProblems(rule: () => string[]): string[] {
  try {
    return rule();
  } catch {
    return [];
  }
}

/** What the sections and section fields state for other plugins' rules; a part whose value is malformed states nothing. */
function factsOf(config: GatewayConfig, parts: ConfigParts): Partial<ConfigFacts> {
  const byKey = config as unknown as Record<string, unknown>;
  const stated = [
    ...(parts.sections ?? []).map((section) => () => section.facts?.(byKey[section.key])),
    ...(parts.sectionFields ?? []).map((fields) => () => fields.facts?.(fieldsOf(config, fields))),
  ];
  const facts: Partial<ConfigFacts> = {};
  for (const state of stated) {
    try {
      Object.assign(facts, state());
    } catch {
      // reported through the schema problems
    }
  }
  return facts;
}

/**
 * The core's rules, then each section's (the rules of the fields plugins added to it first, then
 * its owner's; built-in sections, then loaded ones, whose value is in `extra`), then each
 * service's fields' (in the order the parts are given).
 */
function crossFieldProblems(config: GatewayConfig, extra: Readonly<Record<string, unknown>>, parts: ConfigParts): string[] {
  const problems = ruleProblems(() => coreRuleProblems(config));
  const facts = factsOf(config, parts);
  const byKey = config as unknown as Record<string, unknown>;
  const added = parts.sectionFields ?? [];
  const addedTo = (key: string) => {
    for (const fields of added.filter((f) => f.section === key)) {
      if (fields.validate) problems.push(...ruleProblems(() => fields.validate!(fieldsOf(config, fields), config, facts)));
    }
  };
  for (const key of Object.keys(CoreConfigSchema.properties)) addedTo(key);
  for (const [sections, values] of [[parts.sections, byKey], [parts.extraSections, extra]] as const) {
    for (const section of sections ?? []) {
      addedTo(section.key);
      if (section.validate) problems.push(...ruleProblems(() => section.validate!(values[section.key], config, facts)));
    }
  }
  // Sections that hold added fields alone (no installed plugin declares them).
  const declared = new Set([...Object.keys(CoreConfigSchema.properties), ...(parts.sections ?? []).map((s) => s.key)]);
  for (const key of new Set(added.map((f) => f.section))) if (!declared.has(key)) addedTo(key);
  config.services.forEach((service, index) => {
    for (const fields of parts.serviceFields ?? []) {
      if (fields.validate) problems.push(...ruleProblems(() => fields.validate!(service, `services[${index}]`, config, facts)));
    }
  });
  return problems;
}

/**
 * A service that sets no `provider` while one of its backends does is an LLM service: the first
 * such backend's provider becomes the service's (the default of its other backends).
 */
function inheritBackendProviders(config: unknown): void {
  const services = (config as { services?: unknown }).services;
  if (!Array.isArray(services)) return;
  for (const service of services as Array<{ provider?: unknown; backends?: unknown }>) {
    if (service.provider !== "" || !Array.isArray(service.backends)) continue;
    const first = (service.backends as Array<{ provider?: unknown }>).find((b) => typeof b.provider === "string" && b.provider !== "");
    if (first) service.provider = first.provider;
  }
}

/**
 * Validates parsed config against the core's schema and every declared part, in one pass:
 * the result lists every problem of the file, each with its path.
 */
export function validateConfigWith(raw: Record<string, unknown>, parts: ConfigParts = {}): ConfigResult {
  const schema = composeConfigSchema(parts);
  const extraSections = parts.extraSections ?? [];
  const core: Record<string, unknown> = {};
  const extra: Record<string, unknown> = {};
  const extraKeys = new Set(extraSections.map((s) => s.key));
  for (const [key, value] of Object.entries(raw)) {
    if (extraKeys.has(key)) extra[key] = value;
    else core[key] = value;
  }
  const problems: string[] = [];
  const config = Value.Default(schema, Value.Convert(schema, Value.Clone(core)));
  inheritBackendProviders(config);
  problems.push(...schemaProblems(schema, config, "", [...extraKeys]));
  for (const section of extraSections) {
    const value = Value.Default(section.schema, Value.Convert(section.schema, Value.Clone(extra[section.key] ?? {})));
    extra[section.key] = value;
    problems.push(...schemaProblems(section.schema, value, `/${section.key}`));
  }
  // Cross-field rules also run on a file with shape errors, so one run lists as much as it can;
  // a rule on a path the schema already reported adds nothing.
  try {
    const reported = new Set(problems.map((p) => p.slice(0, p.indexOf(":"))));
    problems.push(...crossFieldProblems(config as GatewayConfig, extra, parts).filter((p) => !reported.has(p.slice(0, p.indexOf(":")))));
  } catch {
    // reported through the schema problems above
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, config: deepFreeze(config as GatewayConfig), extra: deepFreeze(extra) };
}

/** Parse + validate in one step; throws `ConfigError` listing every problem. */
export function loadConfigWith(text: string, env: Env, parts: ConfigParts = {}): { config: GatewayConfig; extra: Readonly<Record<string, unknown>> } {
  const result = validateConfigWith(parseConfigText(text, env), parts);
  if (!result.ok) throw new ConfigError(result.problems);
  return result;
}
