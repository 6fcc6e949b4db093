/**
 * The Messages request's well-known fields and the types they must have, checked before
 * anything is looked up or sent, whatever the backend. The Messages API has no nulls: `null`
 * is a wrong type like any other.
 */
import {
  BOOLEAN,
  COUNT,
  fieldProblem,
  type FieldRules,
  NUMBER,
  OBJECT,
  OBJECTS,
  POSITIVE_INTEGER,
  STRING,
  STRING_OR_OBJECTS,
  STRINGS,
} from "../../core/llm/client-protocol.ts";
import type { JsonObject } from "../../core/llm/json.ts";

const MESSAGES_RULES: FieldRules = [
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

export function messagesShapeProblem(body: JsonObject): string | undefined {
  return fieldProblem(body, MESSAGES_RULES);
}
