/**
 * `limit` and `offset` of the listing endpoints (`GET /jobs`, `GET /-/usage`), read the same
 * way everywhere: digits only; a limit above the maximum is cut to it (the answer echoes what
 * was used), an offset past any list gives an empty page; anything else is a 400 naming the
 * parameter.
 */
import { errors } from "./errors.ts";

export interface Page {
  limit: number;
  offset: number;
}

export interface PageRules {
  defaultLimit: number;
  maxLimit: number;
}

function wholeNumber(query: (name: string) => string | undefined, name: string, min: number): number | undefined {
  const text = query(name);
  if (text === undefined || text === "") return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min) {
    throw errors.badRequest(`query parameter "${name}" must be a whole number of at least ${min}; got "${text}"`);
  }
  // Digit strings past 2^53 are still whole numbers: they mean "as many as there are".
  return Math.min(Number(text), Number.MAX_SAFE_INTEGER);
}

export function pageParams(query: (name: string) => string | undefined, rules: PageRules): Page {
  const limit = Math.min(wholeNumber(query, "limit", 1) ?? rules.defaultLimit, rules.maxLimit);
  const offset = wholeNumber(query, "offset", 0) ?? 0;
  return { limit, offset };
}
