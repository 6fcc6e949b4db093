/**
 * Chat completions, the identity client protocol: the format the gateway speaks inside, so a
 * request in it goes to the provider's translator as it is and the answer comes back as the
 * translator leaves it. It takes every path no other protocol claims: chat completions, and the
 * other OpenAI-style bodies (completions, embeddings, a passthrough backend's own paths).
 */
import type { ClientProtocol } from "./client-protocol.ts";
import { CHAT_COMPLETIONS_PATH } from "./client-protocol.ts";
import {
  BOOLEAN,
  COUNT,
  fieldProblem,
  type FieldRule,
  type FieldRules,
  INTEGER,
  NUMBER,
  OBJECT,
  OBJECTS,
  POSITIVE_INTEGER,
  STRING,
  STRING_OR_OBJECT,
  STRING_OR_STRINGS,
} from "./field-rules.ts";
import { isRecord } from "./json.ts";

// `include_usage` decides whether a stream reports the tokens it is counted by.
const STREAM_OPTIONS: FieldRule = {
  must: 'an object whose "include_usage" is true or false',
  fits: (value) => isRecord(value) && (value.include_usage === undefined || typeof value.include_usage === "boolean"),
};

/** Chat completions and the other OpenAI-style bodies (completions, embeddings, a local runtime's chat). */
const CHAT_RULES: FieldRules = [
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

/** The OpenAI API takes a `null` field as absent, except these two, which are never null there. */
const NOT_NULLABLE = new Set(["model", "messages"]);
const nullable = (field: string) => !NOT_NULLABLE.has(field);

export const chatCompletionsProtocol: ClientProtocol = {
  name: "chat_completions",
  paths: [CHAT_COMPLETIONS_PATH],
  shapeProblem: (body) => fieldProblem(body, CHAT_RULES, nullable),
};
