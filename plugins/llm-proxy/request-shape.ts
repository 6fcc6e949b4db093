/**
 * The shape of an LLM request's well-known fields, checked before anything is looked up or sent.
 * The gateway decides on some of them itself (`stream`: the cache, billing, how the answer is
 * read) and a lenient backend may read a wrong type differently (`"stream": "yes"` streamed
 * while the gateway took it as a plain request: no tokens counted, events cached as a plain
 * answer), so a field of the wrong type is refused with 400 naming it and what it must be.
 *
 * Only the fields listed are checked, and only when present: anything else (embeddings
 * `input`, a passthrough backend's own fields) is the backend's to judge. Chat-completions
 * fields may be `null`, which the OpenAI API takes as absent; the Messages API has no nulls.
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";

/** A value for a message: its JSON, cut at 40 characters. */
export function shownValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

interface FieldRule {
  /** What the value must be, as the message says it. */
  must: string;
  fits(value: unknown): boolean;
}

const isInteger = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value);
const isString = (value: unknown): value is string => typeof value === "string";

const STRING: FieldRule = { must: "a string", fits: isString };
const BOOLEAN: FieldRule = { must: "true or false", fits: (value) => typeof value === "boolean" };
const NUMBER: FieldRule = { must: "a number", fits: (value) => typeof value === "number" };
const INTEGER: FieldRule = { must: "an integer", fits: isInteger };
const POSITIVE_INTEGER: FieldRule = { must: "a positive integer", fits: (value) => isInteger(value) && value >= 1 };
// 0 is a real request on legacy completions: `max_tokens: 0` with `echo` scores a prompt.
const COUNT: FieldRule = { must: "a non-negative integer", fits: (value) => isInteger(value) && value >= 0 };
const OBJECT: FieldRule = { must: "an object", fits: isRecord };
const OBJECTS: FieldRule = { must: "an array of objects", fits: (value) => Array.isArray(value) && value.every(isRecord) };
const STRINGS: FieldRule = { must: "an array of strings", fits: (value) => Array.isArray(value) && value.every(isString) };
const STRING_OR_STRINGS: FieldRule = { must: "a string or an array of strings", fits: (value) => isString(value) || STRINGS.fits(value) };
const STRING_OR_OBJECT: FieldRule = { must: "a string or an object", fits: (value) => isString(value) || isRecord(value) };
// `include_usage` decides whether a stream reports the tokens it is counted by.
const STREAM_OPTIONS: FieldRule = {
  must: 'an object whose "include_usage" is true or false',
  fits: (value) => isRecord(value) && (value.include_usage === undefined || typeof value.include_usage === "boolean"),
};
const STRING_OR_OBJECTS: FieldRule = { must: "a string or an array of content blocks (objects)", fits: (value) => isString(value) || OBJECTS.fits(value) };

type Rules = ReadonlyArray<readonly [field: string, rule: FieldRule]>;

/** Chat completions and the other OpenAI-style bodies (completions, embeddings, a local runtime's chat). */
const CHAT_RULES: Rules = [
  ["model", STRING],
  ["messages", OBJECTS],
  ["stream", BOOLEAN],
  ["stream_options", STREAM_OPTIONS],
  ["n", POSITIVE_INTEGER],
  ["max_tokens", COUNT],
  ["max_completion_tokens", COUNT],
  ["temperature", NUMBER],
  ["top_p", NUMBER],
  ["presence_penalty", NUMBER],
  ["frequency_penalty", NUMBER],
  ["seed", INTEGER],
  ["stop", STRING_OR_STRINGS],
  ["tools", OBJECTS],
  ["tool_choice", STRING_OR_OBJECT],
  ["parallel_tool_calls", BOOLEAN],
  ["response_format", OBJECT],
  ["logit_bias", OBJECT],
  ["metadata", OBJECT],
  ["user", STRING],
];

/** Never null there, unlike the chat-completions fields. */
const NOT_NULLABLE = new Set(["model", "messages"]);

/** An inbound Messages request (`/v1/messages`, `/v1/messages/count_tokens`). */
const MESSAGES_RULES: Rules = [
  ["model", STRING],
  ["messages", OBJECTS],
  ["max_tokens", POSITIVE_INTEGER],
  ["stream", BOOLEAN],
  ["system", STRING_OR_OBJECTS],
  ["stop_sequences", STRINGS],
  ["temperature", NUMBER],
  ["top_p", NUMBER],
  ["top_k", COUNT],
  ["tools", OBJECTS],
  ["tool_choice", OBJECT],
  ["thinking", OBJECT],
  ["metadata", OBJECT],
];

/** What is wrong with the first ill-typed field of `body`, or undefined when the listed fields fit. */
export function requestShapeProblem(body: JsonObject, messagesApi: boolean): string | undefined {
  const rules = messagesApi ? MESSAGES_RULES : CHAT_RULES;
  for (const [field, rule] of rules) {
    const value = body[field];
    if (value === undefined || rule.fits(value)) continue;
    if (value === null && !messagesApi && !NOT_NULLABLE.has(field)) continue;
    return `"${field}" must be ${rule.must}, not ${shownValue(value)}`;
  }
  return undefined;
}
