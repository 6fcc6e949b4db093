/**
 * The items of a conversation as the gateway stores them: a request's `input` (a string, or
 * items) written out as items with ids, as `GET /v1/responses/{id}/input_items` lists them,
 * and the ids the gateway gives what it creates (`resp_`, `msg_`, `fc_`: the Responses API's
 * prefixes).
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";

/** A new id with the Responses API's prefix for its kind. */
export function newItemId(prefix: "resp" | "msg" | "fc", newId: () => string): string {
  return `${prefix}_${newId().replace(/-/g, "")}`;
}

/** A message's content as parts: a string becomes one text part (`output_text` for the assistant, as the API writes it). */
function contentParts(role: unknown, content: unknown): unknown {
  if (typeof content !== "string") return content;
  return role === "assistant" ? [{ type: "output_text", text: content, annotations: [] }] : [{ type: "input_text", text: content }];
}

/** The request's `input` as items with ids (shape.ts has checked it). */
export function inputItems(input: unknown, newId: () => string): JsonObject[] {
  if (typeof input === "string") return [{ type: "message", id: newItemId("msg", newId), role: "user", content: [{ type: "input_text", text: input }] }];
  if (!Array.isArray(input)) return [];
  return input.filter(isRecord).map((item) => {
    const type = item.type ?? "message";
    if (type === "message") {
      return { ...item, type, id: typeof item.id === "string" ? item.id : newItemId("msg", newId), content: contentParts(item.role, item.content) };
    }
    if (type === "function_call" && typeof item.id !== "string") return { ...item, id: newItemId("fc", newId) };
    return item;
  });
}
