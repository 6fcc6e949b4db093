/**
 * `${VAR}` and `${VAR:-default}` expansion. It runs on the parsed YAML's string values,
 * not on the raw text, so a secret containing YAML syntax (a colon, a quote) cannot
 * change the structure of the file. An unset variable without a default expands to "".
 */

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export type Env = Readonly<Record<string, string | undefined>>;

export function expandString(value: string, env: Env): string {
  return value.replace(REFERENCE, (_all, name: string, fallback: string | undefined) => {
    const set = env[name];
    if (set !== undefined && set !== "") return set;
    return fallback ?? "";
  });
}

/** Deep copy of `value` with every string expanded. */
export function expandEnv(value: unknown, env: Env): unknown {
  if (typeof value === "string") return expandString(value, env);
  if (Array.isArray(value)) return value.map((item) => expandEnv(item, env));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = expandEnv(item, env);
    return out;
  }
  return value;
}
