/**
 * A Messages request (from a client) -> the chat-completions request the gateway sends on to a
 * provider that does not speak Messages (its translator then takes it from there).
 *
 * | Messages                                          | chat completions                                  |
 * |---------------------------------------------------|---------------------------------------------------|
 * | `system` string or text blocks                    | a first `system` message (blocks joined)          |
 * | user `text` / `image` blocks (base64 or url)      | `text` / `image_url` parts (a data: URL for base64) |
 * | user `tool_result` blocks                         | `tool` messages (before the rest of that user turn) |
 * | assistant `text` / `tool_use` blocks              | `content` / `tool_calls[]` (input as a JSON string) |
 * | `tools[] {name, description, input_schema}`       | `tools[] {type:"function", function:{name, description, parameters}}` |
 * | `tool_choice` auto / any / none / tool{name}      | "auto" / "required" / "none" / {type:"function", function:{name}} |
 * | `tool_choice.disable_parallel_tool_use: true`     | `parallel_tool_calls: false`                      |
 * | `max_tokens`, `stop_sequences`, `temperature`, `top_p`, `stream` | `max_tokens`, `stop`, the same       |
 * | `metadata.user_id`                                | `user`                                            |
 *
 * Thinking blocks, `top_k` and other Messages-only fields have no chat-completions equivalent
 * and are left out.
 */
import { shownValue as describe, UntranslatableRequest } from "../../core/llm/client-protocol.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import type { ChatToolCall } from "../../core/llm/chat.ts";
import { toolCallOf } from "../../core/llm/messages.ts";

const refuse = (message: string) => new UntranslatableRequest(message);

/** A string, or the text of text blocks joined. */
function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((b) => (isRecord(b) && b.type === "text" && typeof b.text === "string" ? b.text : "")).join("");
  if (content === undefined || content === null) return "";
  throw refuse(`${where} must be a string or an array of content blocks, not ${describe(content)}`);
}

function imagePart(block: JsonObject, where: string): JsonObject {
  const source = isRecord(block.source) ? block.source : {};
  if (source.type === "base64" && typeof source.media_type === "string" && typeof source.data === "string") {
    return { type: "image_url", image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === "url" && typeof source.url === "string") return { type: "image_url", image_url: { url: source.url } };
  throw refuse(`${where}.source must be {type:"base64", media_type, data} or {type:"url", url}`);
}

function toolMessage(block: JsonObject, where: string): JsonObject {
  if (typeof block.tool_use_id !== "string") throw refuse(`${where}.tool_use_id must be a string`);
  const text = textOf(block.content, `${where}.content`);
  return { role: "tool", tool_call_id: block.tool_use_id, content: block.is_error === true && text === "" ? "error" : text };
}

/** One user turn: its tool results first (they answer the previous assistant turn), then its own content. */
function userMessages(content: unknown, where: string): JsonObject[] {
  if (typeof content === "string") return [{ role: "user", content }];
  if (!Array.isArray(content)) throw refuse(`${where}.content must be a string or an array of content blocks`);
  const tools: JsonObject[] = [];
  const parts: JsonObject[] = [];
  content.forEach((block, i) => {
    const at = `${where}.content[${i}]`;
    if (!isRecord(block)) throw refuse(`${at} must be an object`);
    if (block.type === "text") parts.push({ type: "text", text: typeof block.text === "string" ? block.text : "" });
    else if (block.type === "image") parts.push(imagePart(block, at));
    else if (block.type === "tool_result") tools.push(toolMessage(block, at));
    else throw refuse(`${at}: a "${String(block.type)}" block cannot be sent to this model's backend; use text, image or tool_result`);
  });
  return parts.length > 0 ? [...tools, { role: "user", content: parts }] : tools;
}

function assistantMessage(content: unknown, where: string): JsonObject {
  if (typeof content === "string") return { role: "assistant", content };
  if (!Array.isArray(content)) throw refuse(`${where}.content must be a string or an array of content blocks`);
  const texts: string[] = [];
  const calls: ChatToolCall[] = [];
  content.forEach((block, i) => {
    if (!isRecord(block)) throw refuse(`${where}.content[${i}] must be an object`);
    if (block.type === "text" && typeof block.text === "string") texts.push(block.text);
    else if (block.type === "tool_use") calls.push(toolCallOf(block));
    // Thinking blocks are the model's own notes: a chat backend has nowhere to take them.
  });
  const message: JsonObject = { role: "assistant", content: texts.length === 0 && calls.length > 0 ? null : texts.join("") };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function tools(value: unknown): JsonObject[] {
  if (!Array.isArray(value)) throw refuse(`"tools" must be an array, not ${describe(value)}`);
  return value.map((tool, i) => {
    if (!isRecord(tool) || typeof tool.name !== "string") throw refuse(`tools[${i}] needs a "name"`);
    const fn: JsonObject = { name: tool.name, parameters: isRecord(tool.input_schema) ? tool.input_schema : { type: "object", properties: {} } };
    if (typeof tool.description === "string") fn.description = tool.description;
    return { type: "function", function: fn };
  });
}

function toolChoice(choice: JsonObject, out: JsonObject): void {
  if (choice.type === "auto") out.tool_choice = "auto";
  else if (choice.type === "any") out.tool_choice = "required";
  else if (choice.type === "none") out.tool_choice = "none";
  else if (choice.type === "tool" && typeof choice.name === "string") out.tool_choice = { type: "function", function: { name: choice.name } };
  else throw refuse(`"tool_choice" must be {type: "auto" | "any" | "none"} or {type: "tool", name}, not ${describe(choice)}`);
  if (choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
}

export function messagesToChatRequest(body: JsonObject): JsonObject {
  if (!Array.isArray(body.messages)) throw refuse(`"messages" must be an array of {role, content}`);
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
    throw refuse(`"max_tokens" must be a positive integer, not ${describe(body.max_tokens)}`);
  }
  const messages: JsonObject[] = [];
  const system = textOf(body.system, `"system"`);
  if (system !== "") messages.push({ role: "system", content: system });
  body.messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(message)) throw refuse(`${where} must be an object`);
    if (message.role === "user") messages.push(...userMessages(message.content, where));
    else if (message.role === "assistant") messages.push(assistantMessage(message.content, where));
    else throw refuse(`${where}.role must be "user" or "assistant", not ${describe(message.role)}`);
  });
  const out: JsonObject = {};
  if (body.model !== undefined) out.model = body.model;
  out.messages = messages;
  out.max_tokens = body.max_tokens;
  if (body.stop_sequences !== undefined) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === "string")) {
      throw refuse(`"stop_sequences" must be an array of strings`);
    }
    if (body.stop_sequences.length > 0) out.stop = body.stop_sequences;
  }
  for (const key of ["temperature", "top_p"] as const) {
    if (body[key] === undefined) continue;
    if (typeof body[key] !== "number") throw refuse(`"${key}" must be a number, not ${describe(body[key])}`);
    out[key] = body[key];
  }
  if (body.stream !== undefined) {
    if (typeof body.stream !== "boolean") throw refuse(`"stream" must be true or false, not ${describe(body.stream)}`);
    out.stream = body.stream;
  }
  if (body.tools !== undefined) out.tools = tools(body.tools);
  if (isRecord(body.tool_choice)) toolChoice(body.tool_choice, out);
  if (isRecord(body.metadata) && typeof body.metadata.user_id === "string" && body.metadata.user_id !== "") out.user = body.metadata.user_id;
  return out;
}
