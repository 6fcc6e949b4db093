/**
 * The type checks a client protocol runs on a request body's well-known fields before anything
 * is looked up or sent (`ClientProtocol.shapeProblem`): a field of the wrong type is refused with
 * 400 naming it and what it must be. Only the fields listed are checked, and only when present:
 * anything else is the backend's to judge.
 */
import { isRecord, type JsonObject } from "./json.ts";

/** A value for a message: its JSON, cut at 40 characters. */
export function shownValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

export interface FieldRule {
  /** What the value must be, as the message says it. */
  must: string;
  fits(value: unknown): boolean;
}

/** The fields to check, in the order they are checked, each with its rule. */
export type FieldRules = ReadonlyArray<readonly [field: string, rule: FieldRule]>;

const isInteger = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value);
const isString = (value: unknown): value is string => typeof value === "string";

export const STRING: FieldRule = { must: "a string", fits: isString };
export const BOOLEAN: FieldRule = { must: "true or false", fits: (value) => typeof value === "boolean" };
export const NUMBER: FieldRule = { must: "a number", fits: (value) => typeof value === "number" };
export const INTEGER: FieldRule = { must: "an integer", fits: isInteger };
export const POSITIVE_INTEGER: FieldRule = { must: "a positive integer", fits: (value) => isInteger(value) && value >= 1 };
// 0 is a real request on legacy completions: `max_tokens: 0` with `echo` scores a prompt.
export const COUNT: FieldRule = { must: "a non-negative integer", fits: (value) => isInteger(value) && value >= 0 };
export const OBJECT: FieldRule = { must: "an object", fits: isRecord };
export const OBJECTS: FieldRule = { must: "an array of objects", fits: (value) => Array.isArray(value) && value.every(isRecord) };
export const STRINGS: FieldRule = { must: "an array of strings", fits: (value) => Array.isArray(value) && value.every(isString) };
export const STRING_OR_STRINGS: FieldRule = { must: "a string or an array of strings", fits: (value) => isString(value) || STRINGS.fits(value) };
export const STRING_OR_OBJECT: FieldRule = { must: "a string or an object", fits: (value) => isString(value) || isRecord(value) };
export const STRING_OR_OBJECTS: FieldRule = {
  must: "a string or an array of content blocks (objects)",
  fits: (value) => isString(value) || OBJECTS.fits(value),
};

/**
 * What is wrong with the first ill-typed field of `body`, or undefined when the listed fields
 * fit. `nullable` names the fields whose `null` means "not set" (as the OpenAI API takes it);
 * without it, `null` is checked like any other value.
 */
export function fieldProblem(body: JsonObject, rules: FieldRules, nullable?: (field: string) => boolean): string | undefined {
  for (const [field, rule] of rules) {
    const value = body[field];
    if (value === undefined || rule.fits(value)) continue;
    if (value === null && nullable?.(field)) continue;
    return `"${field}" must be ${rule.must}, not ${shownValue(value)}`;
  }
  return undefined;
}
