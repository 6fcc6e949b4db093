/**
 * Type checks on the chat-completions fields the Gemini translation forwards: a field of the
 * wrong type is refused with a 400 that names it (the backend would refuse it less clearly, or
 * not at all and do something else). `null` is "not set", as the chat-completions API takes it.
 */
import type { JsonObject } from "../../core/llm/provider.ts";

/** A request the Gemini API cannot express: the gateway answers 400 with this message. */
export const refuse = (message: string) => new Error(message);

/** The offending value as the client wrote it, cut short. */
export function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

const isSet = (value: unknown) => value !== undefined && value !== null;

/** A token limit or a count: a positive integer. */
export function positiveInteger(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (!isSet(value)) return undefined;
  if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  throw refuse(`"${field}" must be a positive integer, not ${describe(value)}`);
}

export function integer(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (!isSet(value)) return undefined;
  if (typeof value === "number" && Number.isInteger(value)) return value;
  throw refuse(`"${field}" must be an integer, not ${describe(value)}`);
}

export function number(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (!isSet(value)) return undefined;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  throw refuse(`"${field}" must be a number, not ${describe(value)}`);
}

/** `stop` as the chat-completions API takes it: a string or an array of strings. */
export function stopSequences(body: JsonObject): string[] | undefined {
  const stop = body.stop;
  if (!isSet(stop)) return undefined;
  if (typeof stop === "string") return [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === "string")) return stop as string[];
  throw refuse(`"stop" must be a string or an array of strings, not ${describe(stop)}`);
}
