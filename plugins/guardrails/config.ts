/**
 * The `guardrails` section: a list of rules, run in the order listed, on what a model reads
 * (`input`) and writes (`output`). Each rule has a name, a kind, its stages, its action, the
 * models, consumers and user types it applies to, and its kind's own settings
 * (docs/guardrails.md). Checked at load: every problem with its path (an invalid or unsafe
 * regex, an unknown entity, a missing setting, a duplicate name); a kind no built-in is
 * and no plugin registered is refused once every plugin is set up (index.ts).
 */
import { type Static, Type } from "@sinclair/typebox";
import "../../core/config/schema-parts.ts"; // registers the "duration" format
import type { ConfigSection } from "../../core/config/schema.ts";
import { compileGlob, GlobError } from "../../core/glob.ts";
import { PII_ENTITIES } from "./pii.ts";
import { regexProblem } from "./regex-safety.ts";

export const BUILTIN_KINDS = ["regex", "pii", "http"] as const;

const Globs = (description: string) => Type.Array(Type.String({ minLength: 1 }), { default: ["*"], description });

export const GuardrailRuleSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, description: "Unique name: the `code` of the error a block answers, and the `guardrail` label of the metrics" }),
    kind: Type.String({ minLength: 1, description: "`regex`, `pii`, `http`, or a kind a plugin registered (`guardrailKinds`)" }),
    on: Type.Array(Type.Union([Type.Literal("input"), Type.Literal("output")]), {
      minItems: 1,
      description: "Stages it checks: `input` (the request, before the cache lookup), `output` (the answer, whole or streamed)",
    }),
    action: Type.Union([Type.Literal("block"), Type.Literal("mask"), Type.Literal("log")], {
      description: "What a match does: refuse (400 `guardrail_blocked`), replace the matched text, or only log and count it",
    }),
    models: Globs("Model aliases (globs) it applies to; default all"),
    consumers: Globs('Consumers (globs) it applies to; default all (a request without a consumer is matched as "")'),
    user_types: Globs("User types (globs) it applies to; default all"),
    patterns: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "regex: the regular expressions (JavaScript syntax)" })),
    mask_with: Type.Optional(Type.String({ description: "regex: what a match is replaced with (default `[REDACTED]`)" })),
    entities: Type.Optional(Type.Array(Type.String(), { description: `pii: the entities to find (${PII_ENTITIES.join(", ")})` })),
    url: Type.Optional(Type.String({ description: "http: the checker's URL (it gets a POST per check)" })),
    timeout: Type.Optional(Type.String({ format: "duration", description: "http: how long a check may take (default `2s`); past it the check failed" })),
    headers: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "http: headers sent to the checker" })),
    failure: Type.Optional(Type.Union([Type.Literal("open"), Type.Literal("closed")], {
      description: "http and plugin kinds: a failed check lets the text pass (`open`) or refuses it (`closed`, the default)",
    })),
    settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "A plugin kind's own settings" })),
    stream_window: Type.Integer({
      minimum: 1,
      default: 256,
      description: "Streams: the most characters held back so that a match split over events is still found",
    }),
    stream_check_every: Type.Integer({
      minimum: 1,
      default: 500,
      description: "Streams: http and plugin kinds check the text so far every this many characters, and at the end",
    }),
  },
  { additionalProperties: false },
);

export type GuardrailRule = Static<typeof GuardrailRuleSchema>;

export const GuardrailsSchema = Type.Array(GuardrailRuleSchema, {
  default: [],
  description: "Guardrails: rules on what models read and write, run in the order listed. See [Guardrails](guardrails.md)",
});

export type GuardrailsConfig = Static<typeof GuardrailsSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    guardrails: GuardrailsConfig;
  }
}

/** The settings each built-in kind reads (any other is a mistake worth saying); plugin kinds read `settings`. */
const KIND_SETTINGS: Record<string, readonly string[]> = {
  regex: ["patterns", "mask_with"],
  pii: ["entities"],
  http: ["url", "timeout", "headers", "failure"],
};
const KIND_ONLY = ["patterns", "mask_with", "entities", "url", "timeout", "headers", "settings"] as const;

function ruleProblems(rule: GuardrailRule, at: string): string[] {
  const problems: string[] = [];
  const own = KIND_SETTINGS[rule.kind] ?? ["failure", "settings"];
  for (const key of KIND_ONLY) {
    if (rule[key] !== undefined && !own.includes(key)) problems.push(`${at}.${key}: not a setting of kind "${rule.kind}" (it reads ${own.join(", ")})`);
  }
  for (const [field, globs] of [["models", rule.models], ["consumers", rule.consumers], ["user_types", rule.user_types]] as const) {
    globs.forEach((glob, i) => {
      try {
        compileGlob(glob);
      } catch (error) {
        if (error instanceof GlobError) problems.push(`${at}.${field}[${i}]: ${error.message}`);
        else throw error;
      }
    });
  }
  if (rule.kind === "regex") {
    if (!rule.patterns || rule.patterns.length === 0) problems.push(`${at}.patterns: required for kind "regex" (at least one regular expression)`);
    rule.patterns?.forEach((pattern, i) => {
      const problem = regexProblem(pattern);
      if (problem) problems.push(`${at}.patterns[${i}]: ${problem}`);
    });
  }
  if (rule.kind === "pii") {
    if (!rule.entities || rule.entities.length === 0) problems.push(`${at}.entities: required for kind "pii" (some of ${PII_ENTITIES.join(", ")})`);
    rule.entities?.forEach((entity, i) => {
      if (!(PII_ENTITIES as readonly string[]).includes(entity)) {
        problems.push(`${at}.entities[${i}]: unknown entity "${entity}"; known entities: ${PII_ENTITIES.join(", ")}`);
      }
    });
  }
  if (rule.kind === "http") {
    if (!rule.url) problems.push(`${at}.url: required for kind "http" (the checker's address)`);
    else if (!URL.canParse(rule.url) || !/^https?:$/.test(new URL(rule.url).protocol)) problems.push(`${at}.url: "${rule.url}" is not an http(s) URL`);
  }
  return problems;
}

/** Every problem of the list, each with its path (`guardrails[2].patterns[0]: ...`). */
export function guardrailsProblems(rules: GuardrailsConfig): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  rules.forEach((rule, index) => {
    const at = `guardrails[${index}]`;
    const first = seen.get(rule.name);
    if (first !== undefined) problems.push(`${at}.name: "${rule.name}" is already the name of guardrails[${first}]; names must be unique`);
    else seen.set(rule.name, index);
    problems.push(...ruleProblems(rule, at));
  });
  return problems;
}

export const guardrailsSection: ConfigSection<typeof GuardrailsSchema> = {
  key: "guardrails",
  schema: GuardrailsSchema,
  validate: (rules) => guardrailsProblems(rules),
};
