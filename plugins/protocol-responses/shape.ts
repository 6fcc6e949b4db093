/**
 * The Responses request's well-known fields and the types they must have, and the items of its
 * `input`, checked before anything is looked up or sent, whatever the backend (a backend that
 * speaks the Responses API itself gets the same checks). `model` is required, as the Responses
 * API requires it; `null` counts as absent, as the OpenAI API takes it.
 */
import { BOOLEAN, fieldProblem, type FieldRule, type FieldRules, NUMBER, OBJECT, OBJECTS, POSITIVE_INTEGER, STRING } from "../../core/llm/client-protocol.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";

const STRING_OR_ITEMS: FieldRule = {
  must: "a string or an array of input items (objects)",
  fits: (value) => typeof value === "string" || (Array.isArray(value) && value.every(isRecord)),
};
const TOOL_CHOICE: FieldRule = {
  must: 'one of "auto", "none", "required", or an object',
  fits: (v) => isRecord(v) || ["auto", "none", "required"].includes(String(v)),
};

const RESPONSES_RULES: FieldRules = [
  ["model", STRING],
  ["input", STRING_OR_ITEMS],
  ["instructions", STRING],
  ["previous_response_id", STRING],
  ["stream", BOOLEAN],
  ["store", BOOLEAN],
  ["background", BOOLEAN],
  ["max_output_tokens", POSITIVE_INTEGER],
  ["temperature", NUMBER],
  ["top_p", NUMBER],
  ["tools", OBJECTS],
  ["tool_choice", TOOL_CHOICE],
  ["parallel_tool_calls", BOOLEAN],
  ["text", OBJECT],
  ["reasoning", OBJECT],
  ["metadata", OBJECT],
  ["user", STRING],
];

/** The item types of the Responses API's `input`; any other is refused whatever the backend. */
export const KNOWN_ITEM_TYPES = new Set([
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "item_reference",
  "file_search_call",
  "web_search_call",
  "computer_call",
  "computer_call_output",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "custom_tool_call",
  "custom_tool_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
]);

const ROLES = ["user", "assistant", "system", "developer"];

/** What is wrong with the first bad item of `input`, or undefined. */
function itemProblem(item: JsonObject, at: string): string | undefined {
  // A message may leave out its type (the API's "easy" input message).
  const type = item.type ?? (item.role !== undefined ? "message" : undefined);
  if (typeof type !== "string") return `${at} needs a "type" (message, function_call, function_call_output, ...) or a "role"`;
  if (!KNOWN_ITEM_TYPES.has(type)) {
    return `${at}: an item of type ${JSON.stringify(type)} is not a Responses input item; use message, function_call or function_call_output`;
  }
  if (type === "message") {
    if (!ROLES.includes(String(item.role))) return `${at}.role must be one of ${ROLES.join(", ")}, not ${JSON.stringify(item.role ?? null)}`;
    if (typeof item.content !== "string" && !(Array.isArray(item.content) && item.content.every(isRecord))) {
      return `${at}.content must be a string or an array of content parts (objects)`;
    }
  }
  if (type === "function_call" && (typeof item.call_id !== "string" || typeof item.name !== "string" || typeof item.arguments !== "string")) {
    return `${at}: a function_call needs "call_id", "name" and "arguments" (strings)`;
  }
  if (type === "function_call_output" && (typeof item.call_id !== "string" || item.output === undefined)) {
    return `${at}: a function_call_output needs "call_id" (a string) and "output"`;
  }
  return undefined;
}

export function responsesShapeProblem(body: JsonObject): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return `"model" is required: the model alias to answer with`;
  const problem = fieldProblem(body, RESPONSES_RULES, () => true);
  if (problem !== undefined) return problem;
  if (Array.isArray(body.input)) {
    for (const [i, item] of body.input.entries()) {
      const found = itemProblem(item as JsonObject, `input[${i}]`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
