/**
 * The JSON bodies of `POST /-/keys` and `PATCH /-/keys/{id}`, checked field by field, within
 * the bounds of ./bounds.ts; every problem is listed in one 400 with the field's name. `null`
 * clears an optional field on PATCH (`user_type`, `expires_at`, `limits`).
 */
import { parseDuration } from "../../../core/config/duration.ts";
import { errors } from "../../../core/errors.ts";
import { compileGlob, GlobError } from "../../../core/glob.ts";
import { headerNameProblem, listProblem, metadataProblem } from "./bounds.ts";
import type { KeyFields, KeyLimits } from "./record.ts";

const FIELDS = ["consumer", "user_type", "groups", "roles", "scopes", "models", "expires_at", "limits", "metadata", "enabled"] as const;
const LIMIT_FIELDS = ["rate", "period", "token_rate", "token_period", "cost_rate", "cost_period"] as const;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

type Patch = { [K in keyof KeyFields]?: KeyFields[K] | null };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function strings(value: unknown, field: string, problems: string[]): string[] | undefined {
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item.trim() === "")) {
    problems.push(`${field}: must be a list of non-empty strings`);
    return undefined;
  }
  const entries = [...new Set(value as string[])];
  const tooBig = listProblem(field, entries);
  if (tooBig) {
    problems.push(tooBig);
    return undefined;
  }
  return entries;
}

/** `value` when a backend can get it in a header, else undefined with the problem noted. */
function headerName(field: string, value: string, problems: string[]): string | undefined {
  const problem = headerNameProblem(field, value);
  if (problem) problems.push(problem);
  return problem ? undefined : value;
}

function limitsOf(value: unknown, problems: string[]): KeyLimits | undefined {
  if (!isRecord(value)) {
    problems.push("limits: must be an object {rate, period, token_rate, token_period, cost_rate, cost_period}");
    return undefined;
  }
  const unknown = Object.keys(value).filter((k) => !(LIMIT_FIELDS as readonly string[]).includes(k));
  if (unknown.length > 0) problems.push(`limits: unknown field ${unknown.map((k) => `"${k}"`).join(", ")}; known: ${LIMIT_FIELDS.join(", ")}`);
  const out: KeyLimits = { rate: 0, period: "1m", token_rate: 0, token_period: "1m", cost_rate: 0, cost_period: "24h" };
  for (const field of ["rate", "token_rate"] as const) {
    const n = value[field];
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) problems.push(`limits.${field}: must be a whole number of at least 0 (0 = off)`);
    else out[field] = n;
  }
  const cost = value.cost_rate;
  if (cost !== undefined) {
    if (typeof cost !== "number" || !Number.isFinite(cost) || cost < 0) {
      problems.push("limits.cost_rate: must be a number of at least 0, in pricing.currency per cost_period (0 = off)");
    } else out.cost_rate = cost;
  }
  for (const field of ["period", "token_period", "cost_period"] as const) {
    const d = value[field];
    if (d === undefined) continue;
    const parsed = typeof d === "string" ? parseDuration(d) : undefined;
    if (typeof parsed !== "number" || parsed <= 0) problems.push(`limits.${field}: must be a positive duration such as "1m" or "1h"`);
    else out[field] = d as string;
  }
  return out;
}

/** A checked body: every field present in it, `null` for the ones to clear. */
export function parseKeyBody(body: unknown, creating: boolean, now: number): Patch {
  if (!isRecord(body)) throw errors.badRequest('the body must be a JSON object such as {"consumer": "team-a", "models": ["gpt-*"]}');
  const problems: string[] = [];
  const unknown = Object.keys(body).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown.length > 0) problems.push(`unknown field ${unknown.map((k) => JSON.stringify(k.slice(0, 64))).join(", ")}; known: ${FIELDS.join(", ")}`);
  const out: Patch = {};
  const { consumer, user_type, expires_at, limits, metadata, enabled } = body;
  if (consumer !== undefined || creating) {
    if (typeof consumer !== "string" || consumer.trim() === "") problems.push("consumer: required, a non-empty string naming who the key belongs to");
    else out.consumer = headerName("consumer", consumer.trim(), problems);
  }
  if (user_type === null && !creating) out.user_type = null;
  else if (user_type !== undefined) {
    if (typeof user_type !== "string" || user_type.trim() === "") problems.push("user_type: must be a non-empty string");
    else out.user_type = headerName("user_type", user_type.trim(), problems);
  }
  for (const field of ["groups", "roles", "scopes"] as const) {
    if (body[field] !== undefined) out[field] = strings(body[field], field, problems);
  }
  if (body.models !== undefined) {
    const models = strings(body.models, "models", problems);
    for (const glob of models ?? []) {
      try {
        compileGlob(glob);
      } catch (error) {
        if (!(error instanceof GlobError)) throw error;
        problems.push(`models: "${glob}": ${error.message}`);
      }
    }
    out.models = models;
  }
  if (expires_at === null && !creating) out.expires_at = null;
  else if (expires_at !== undefined) {
    if (typeof expires_at !== "string" || !RFC3339.test(expires_at) || Number.isNaN(Date.parse(expires_at))) {
      problems.push('expires_at: must be an RFC 3339 time such as "2027-01-31T00:00:00Z"');
    } else if (Date.parse(expires_at) <= now) problems.push(`expires_at: ${expires_at} is in the past; give a future time`);
    else out.expires_at = new Date(Date.parse(expires_at)).toISOString();
  }
  if (limits === null && !creating) out.limits = null;
  else if (limits !== undefined) out.limits = limitsOf(limits, problems);
  if (metadata !== undefined) {
    if (!isRecord(metadata) || Object.values(metadata).some((v) => typeof v !== "string")) problems.push("metadata: must be an object of string values");
    else {
      const tooBig = metadataProblem(metadata as Record<string, string>);
      if (tooBig) problems.push(tooBig);
      else out.metadata = metadata as Record<string, string>;
    }
  }
  if (enabled !== undefined) {
    if (typeof enabled !== "boolean") problems.push("enabled: must be true or false");
    else out.enabled = enabled;
  }
  if (problems.length > 0) throw errors.badRequest(`invalid key: ${problems.join("; ")}`);
  return out;
}

/** The fields after applying `patch` to `current` (`null` clears). */
export function applyPatch(current: KeyFields, patch: Patch): KeyFields {
  const next: KeyFields = { ...current };
  for (const [field, value] of Object.entries(patch) as [keyof KeyFields, unknown][]) {
    if (value === null) delete next[field];
    else if (value !== undefined) (next as unknown as Record<string, unknown>)[field] = value;
  }
  return next;
}
