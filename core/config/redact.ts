/**
 * The running config as `GET /-/config` shows it: every secret replaced by "***". Which
 * values are secret is decided here, in one list of rules, so a plugin that adds a secret
 * setting is covered by adding a line (or, better, by naming it like one: `*_secret`,
 * `*_token`, `password`, `*_key` are caught by name wherever they sit).
 *
 * An empty string stays "": it says "not set", which is not a secret and tells the operator
 * whether, say, webhooks are signed.
 */

export const REDACTED = "***";

/**
 * A rule matches a value by its path: dot-separated keys, `[]` for any element of a list,
 * `*` for any key of a map (`services[].inference_headers.*`). The whole value at a matched
 * path is replaced (a map or list too).
 */
export const SECRET_PATHS: readonly string[] = [
  "redis.password",
  "object_store.access_key",
  "object_store.secret_key",
  "object_store.encryption.key",
  "webhooks.signing_secret",
  "auth.oauth2.keys",
  "admin.token",
  "auth.api_key.secret",
  "opentelemetry.exporter.headers.*",
  "services[].inference_headers.*",
  "services[].backends[].headers.*",
  "services[].swagger_headers.*",
];

/**
 * Leaf keys (strings, numbers, lists of them; never a section) whose name says secret,
 * wherever they are: a plugin's `signing_secret`, `admin_token`, `password`, `api_key`.
 * Whole names, or a `_secret`/`_token`/`_key`... suffix, so `token_rate`, `max_tokens` or
 * `max_keys` are not caught.
 */
export const SECRET_NAME = /^(secret|password|passwd|token|key|keys|credentials?)$|_(secret|password|passwd|token|key)$/i;

/** `scheme://user:password@host`: the credentials of any URL-looking string are hidden. */
const URL_CREDENTIALS = /^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i;

function matches(pattern: readonly string[], path: readonly string[]): boolean {
  if (pattern.length !== path.length) return false;
  return pattern.every((part, i) => part === "*" || part === path[i]);
}

const PATTERNS = SECRET_PATHS.map((rule) => rule.replace(/\[\]/g, ".[]").split("."));

function isSecretPath(path: readonly string[]): boolean {
  return PATTERNS.some((pattern) => matches(pattern, path));
}

function isLeaf(value: unknown): boolean {
  if (Array.isArray(value)) return value.every((item) => item === null || typeof item !== "object");
  return value === null || typeof value !== "object";
}

function isEmpty(value: unknown): boolean {
  return value === "" || value === null || value === undefined || (Array.isArray(value) && value.length === 0);
}

function redactAt(value: unknown, path: string[]): unknown {
  const key = path[path.length - 1] ?? "";
  if (isSecretPath(path) || (isLeaf(value) && key !== "[]" && SECRET_NAME.test(key))) {
    return isEmpty(value) ? value : REDACTED;
  }
  if (typeof value === "string") return value.replace(URL_CREDENTIALS, `$1${REDACTED}@`);
  if (Array.isArray(value)) return value.map((item) => redactAt(item, [...path, "[]"]));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactAt(v, [...path, k])]));
  }
  return value;
}

/** A deep copy of `config` with every secret replaced by "***". */
export function redactConfig(config: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return redactAt(config, []) as Record<string, unknown>;
}
