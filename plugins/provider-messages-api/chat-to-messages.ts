/**
 * Chat-completions request -> Messages-style request (docs/design.md#messages-translation).
 *
 * | chat completions                                  | Messages-style                                  |
 * |---------------------------------------------------|-------------------------------------------------|
 * | `messages[]` with `system` / `developer` roles    | `system` string (joined with blank lines) + `messages[]`; text blocks when a part carries `cache_control` |
 * | a `system` string field (some clients send it)    | put first in `system`                           |
 * | `max_completion_tokens`, else `max_tokens`        | `max_tokens` (required there; default 4096)     |
 * | `stop` string or array                            | `stop_sequences[]`                              |
 * | `tools[] {type:"function", function:{name, description, parameters}}` | `tools[] {name, description, input_schema}` (a tool already in that shape is kept) |
 * | `tool_choice` "auto" / "required" / "none" / {function:{name}} | {type:"auto"} / {type:"any"} / {type:"none"} / {type:"tool", name} |
 * | `parallel_tool_calls: false`                      | `tool_choice.disable_parallel_tool_use: true`  |
 * | assistant `tool_calls[]` (arguments JSON string)  | `tool_use` blocks (`input` object)              |
 * | `tool` role messages                              | one user message of `tool_result` blocks        |
 * | `image_url` parts (data: URL or http URL)         | `image` blocks (base64 or url source)           |
 * | `temperature`, `top_p`, `top_k`, `stream`         | the same                                        |
 * | `user`                                            | `metadata.user_id`                              |
 * | `cache_control` on a content part, a message, a tool | kept on the block / the message's last block / the tool |
 *
 * Everything else (`n`, penalties, `logprobs`, `response_format`, `seed`, `stream_options`,
 * chat-completions `metadata`, ...)
 * is dropped: a Messages-style API refuses fields it does not know.
 */
import { shownValue as describe } from "../../core/llm/field-rules.ts";
import { isRecord, type JsonObject } from "../../core/llm/provider.ts";

/** Used when the client sets neither `max_tokens` nor `max_completion_tokens`. */
export const DEFAULT_MAX_TOKENS = 4096;

/** A request the Messages-style API cannot express: the gateway answers 400 with this message. */
const refuse = (message: string) => new Error(message);

type Block = JsonObject;

/**
 * Prompt caching: a `cache_control` marker (`{"type":"ephemeral"}`, maybe with a `ttl`) is the
 * Messages API's own field; it is kept as the client wrote it, on the block it came with, so a
 * cached prefix stays cached through the gateway.
 */
function withMarker(block: Block, source: JsonObject): Block {
  return isRecord(source.cache_control) ? { ...block, cache_control: source.cache_control } : block;
}

const hasMarker = (block: Block) => isRecord(block.cache_control);

/** A marker on the message itself (as other gateways take it) goes on its last block. */
function withMessageMarker(blocks: Block[], message: JsonObject): Block[] {
  if (blocks.length === 0 || !isRecord(message.cache_control)) return blocks;
  return [...blocks.slice(0, -1), withMarker(blocks[blocks.length - 1], message)];
}

/** A system/developer message as text blocks, markers kept (see `systemOf`). */
function systemBlocks(message: JsonObject, where: string): Block[] {
  const content = message.content;
  const blocks = Array.isArray(content)
    ? content.map((
      part,
    ) => (isRecord(part) ? withMarker({ type: "text", text: typeof part.text === "string" ? part.text : "" }, part) : { type: "text", text: "" }))
    : [{ type: "text", text: textOf(content, where) }];
  return withMessageMarker(blocks, message);
}

/**
 * The `system` field: one string (each message's parts joined, messages joined with a blank
 * line), or, when any part carries a cache marker, the text blocks themselves (a marker can
 * only sit on a block; the Messages API refuses empty ones).
 */
function systemOf(messages: Block[][]): string | Block[] | undefined {
  if (messages.length === 0) return undefined;
  if (messages.some((blocks) => blocks.some(hasMarker))) return messages.flat().filter((b) => b.text !== "");
  return messages.map((blocks) => blocks.map((b) => b.text).join("")).join("\n\n");
}

/** The text of a system/developer/tool message: a string, or its text parts joined. */
function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (isRecord(part) && typeof part.text === "string" ? part.text : ""))
      .join("");
  }
  if (content === null || content === undefined) return "";
  throw refuse(`${where}: content must be a string or an array of text parts`);
}

function imageBlock(part: JsonObject, where: string): Block {
  const image = isRecord(part.image_url) ? part.image_url : undefined;
  const url = typeof image?.url === "string" ? image.url : typeof part.image_url === "string" ? part.image_url : undefined;
  if (url === undefined) throw refuse(`${where}: an image_url part needs image_url.url`);
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } };
  return { type: "image", source: { type: "url", url } };
}

/** User/assistant content parts -> content blocks; parts already in block form pass unchanged. */
function blocksOf(content: unknown, where: string): Block[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw refuse(`${where}: content must be a string or an array of parts`);
  return content.map((part, i) => {
    if (!isRecord(part)) throw refuse(`${where}.content[${i}]: a part must be an object`);
    if (part.type === "text") return withMarker({ type: "text", text: typeof part.text === "string" ? part.text : "" }, part);
    if (part.type === "image_url") return withMarker(imageBlock(part, `${where}.content[${i}]`), part);
    return part;
  });
}

function toolUseBlocks(toolCalls: unknown, where: string): Block[] {
  if (!Array.isArray(toolCalls)) return [];
  return toolCalls.map((call, i) => {
    const fn = isRecord(call) && isRecord(call.function) ? call.function : undefined;
    if (!isRecord(call) || !fn || typeof fn.name !== "string") {
      throw refuse(`${where}.tool_calls[${i}]: needs function.name`);
    }
    let input: unknown = {};
    if (typeof fn.arguments === "string" && fn.arguments.trim() !== "") {
      try {
        input = JSON.parse(fn.arguments);
      } catch {
        throw refuse(`${where}.tool_calls[${i}].function.arguments is not valid JSON`);
      }
    } else if (isRecord(fn.arguments)) {
      input = fn.arguments;
    }
    return { type: "tool_use", id: String(call.id ?? ""), name: fn.name, input };
  });
}

/** Content as blocks when the message carries a marker (a string has nowhere to hold it), else as it came. */
function contentOf(message: JsonObject, where: string): string | Block[] {
  if (typeof message.content === "string" && !isRecord(message.cache_control)) return message.content;
  return withMessageMarker(blocksOf(message.content, where), message);
}

/** The marker of a tool message: on the message, else the last one on its parts. */
function toolResultMarker(message: JsonObject): JsonObject {
  if (isRecord(message.cache_control) || !Array.isArray(message.content)) return message;
  return message.content.filter(isRecord).findLast((part) => isRecord(part.cache_control)) ?? message;
}

export function convertMessages(messages: unknown, systemField: unknown): { system: string | Block[] | undefined; messages: JsonObject[] } {
  if (!Array.isArray(messages)) throw refuse("messages must be an array");
  const system: Block[][] = typeof systemField === "string" && systemField !== "" ? [[{ type: "text", text: systemField }]] : [];
  const out: JsonObject[] = [];
  messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(message)) throw refuse(`${where} must be an object`);
    const role = message.role;
    if (role === "system" || role === "developer") {
      system.push(systemBlocks(message, where));
    } else if (role === "user") {
      out.push({ role: "user", content: contentOf(message, where) });
    } else if (role === "assistant") {
      const toolUses = toolUseBlocks(message.tool_calls, where);
      const content = contentOf(message, where);
      if (toolUses.length === 0 && typeof content === "string") {
        out.push({ role: "assistant", content });
      } else {
        out.push({ role: "assistant", content: [...(typeof content === "string" ? blocksOf(content, where) : content), ...toolUses] });
      }
    } else if (role === "tool") {
      const result = withMarker(
        { type: "tool_result", tool_use_id: String(message.tool_call_id ?? ""), content: textOf(message.content, where) },
        toolResultMarker(message),
      );
      // Results of one assistant turn go back together, in one user message.
      const previous = out[out.length - 1];
      const previousBlocks = previous?.role === "user" && Array.isArray(previous.content) ? (previous.content as unknown[]) : undefined;
      if (previousBlocks && previousBlocks.every((b) => isRecord(b) && b.type === "tool_result")) previousBlocks.push(result);
      else out.push({ role: "user", content: [result] });
    } else {
      throw refuse(`${where}: role "${String(role)}" has no Messages-style equivalent; use system, developer, user, assistant or tool`);
    }
  });
  return { system: systemOf(system), messages: out };
}

export function convertTools(tools: unknown): unknown {
  if (!Array.isArray(tools)) return tools;
  return tools.map((tool) => {
    if (!isRecord(tool) || !isRecord(tool.function)) return tool;
    const fn = tool.function;
    const out: JsonObject = { name: fn.name, input_schema: isRecord(fn.parameters) ? fn.parameters : { type: "object", properties: {} } };
    if (typeof fn.description === "string") out.description = fn.description;
    // In the chat format the marker sits on the tool object, next to `function`.
    return withMarker(out, tool);
  });
}

export function convertToolChoice(choice: unknown, parallel: unknown): JsonObject | undefined {
  let out: JsonObject | undefined;
  if (choice === "auto") out = { type: "auto" };
  else if (choice === "required") out = { type: "any" };
  else if (choice === "none") out = { type: "none" };
  else if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === "string") out = { type: "tool", name: choice.function.name };
  else if (isRecord(choice)) out = { ...choice };
  if (parallel === false) out = { ...(out ?? { type: "auto" }), disable_parallel_tool_use: true };
  return out;
}

/** `stop` as the chat-completions API takes it: a string or an array of strings. */
function stopSequences(stop: unknown): string[] {
  if (typeof stop === "string") return [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === "string")) return stop as string[];
  throw refuse(`"stop" must be a string or an array of strings, not ${describe(stop)}`);
}

/**
 * A token limit the client set: a positive integer, else 400 (sending a default instead would
 * hide the client's mistake). Absent or null: not set.
 */
function tokenLimit(body: JsonObject, field: "max_tokens" | "max_completion_tokens"): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  throw refuse(`"${field}" must be a positive integer, not ${describe(value)}`);
}

/** Forwarded as they are, once their type is right (the Messages-style API would refuse others less clearly). */
const NUMBER_FIELDS = ["temperature", "top_p", "top_k"] as const;

export function chatToMessagesRequest(body: JsonObject): JsonObject {
  const { system, messages } = convertMessages(body.messages, body.system);
  const out: JsonObject = {};
  if (body.model !== undefined) out.model = body.model;
  if (system !== undefined) out.system = system;
  out.messages = messages;
  const maxCompletion = tokenLimit(body, "max_completion_tokens");
  const maxTokens = tokenLimit(body, "max_tokens");
  out.max_tokens = maxCompletion ?? maxTokens ?? DEFAULT_MAX_TOKENS;
  if (body.stop !== undefined && body.stop !== null) out.stop_sequences = stopSequences(body.stop);
  for (const key of NUMBER_FIELDS) {
    const value = body[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number") throw refuse(`"${key}" must be a number, not ${describe(value)}`);
    out[key] = value;
  }
  if (body.stream !== undefined && body.stream !== null) {
    if (typeof body.stream !== "boolean") throw refuse(`"stream" must be true or false, not ${describe(body.stream)}`);
    out.stream = body.stream;
  }
  if (body.tools !== undefined) out.tools = convertTools(body.tools);
  const toolChoice = convertToolChoice(body.tool_choice, body.parallel_tool_calls);
  if (toolChoice !== undefined) out.tool_choice = toolChoice;
  if (typeof body.user === "string" && body.user !== "") out.metadata = { user_id: body.user };
  return out;
}
