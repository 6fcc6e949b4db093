/**
 * Chat-completions request -> Bedrock Converse request body (the same body for Converse and
 * ConverseStream: the endpoint, not a field, says whether the answer streams).
 *
 * | chat completions                                      | Converse                                              |
 * |-------------------------------------------------------|-------------------------------------------------------|
 * | `system` / `developer` messages, a `system` string field | `system[]` `{text}` blocks                         |
 * | `user` / `assistant` text (string or text parts)      | `messages[].content[]` `{text}` (blank text left out: Bedrock refuses it) |
 * | `image_url` part with a `data:image/...;base64,` URL  | `{image: {format, source: {bytes: <base64>}}}`        |
 * | `image_url` part with an `s3://` URL                  | `{image: {format, source: {s3Location: {uri}}}}`      |
 * | assistant `tool_calls[]` (arguments JSON string)      | `{toolUse: {toolUseId, name, input}}` blocks          |
 * | `tool` messages                                       | `{toolResult: {toolUseId, content: [{text}]}}` blocks in a user turn |
 * | consecutive messages of one role (tool results, then a user message) | one turn (Bedrock wants turns to alternate) |
 * | `tools[] {type:"function", function:{name, description, parameters}}` | `toolConfig.tools[] {toolSpec: {name, description, inputSchema: {json}}}` |
 * | `tool_choice` "auto" / "required" / {function:{name}} | `toolConfig.toolChoice` {auto:{}} / {any:{}} / {tool:{name}} |
 * | `tool_choice` "none"                                  | no `toolConfig` (kept without a choice when the conversation already holds tool blocks: Bedrock requires it then) |
 * | `max_completion_tokens`, else `max_tokens`            | `inferenceConfig.maxTokens`                           |
 * | `temperature`, `top_p`                                | `inferenceConfig.temperature`, `inferenceConfig.topP` |
 * | `stop` string or array                                | `inferenceConfig.stopSequences`                       |
 * | `cache_control` on a part, a message or a tool        | a `{cachePoint: {type: "default"}}` block right after it |
 *
 * Dropped: `model` (it is in the URL), `stream`, `stream_options`, `n`, penalties, `logprobs`,
 * `response_format`, `seed`, `top_k` (model-specific on Bedrock), `parallel_tool_calls`, `user`.
 * http(s) image URLs are refused: Converse takes image bytes or an S3 location, not a URL.
 */
import { isRecord, type JsonObject } from "../../core/llm/provider.ts";

type Block = JsonObject;
type Role = "user" | "assistant";

const refuse = (message: string) => new Error(message);

/** The offending value as the client wrote it, cut short. */
function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

const CACHE_POINT: Block = { cachePoint: { type: "default" } };

/** `blocks`, then a cache point when `source` carries a `cache_control` marker. */
function withCachePoint(blocks: Block[], source: JsonObject): Block[] {
  return isRecord(source.cache_control) && blocks.length > 0 ? [...blocks, CACHE_POINT] : blocks;
}

/** Converse names image formats by their subtype. */
const IMAGE_FORMATS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp" };

function imageFormat(mediaType: string, where: string): string {
  const format = IMAGE_FORMATS[mediaType.toLowerCase()];
  if (!format) throw refuse(`${where}: Bedrock takes png, jpeg, gif or webp images, not "${mediaType}"`);
  return format;
}

function imageBlock(part: JsonObject, where: string): Block {
  const image = isRecord(part.image_url) ? part.image_url : undefined;
  const url = typeof image?.url === "string" ? image.url : typeof part.image_url === "string" ? part.image_url : undefined;
  if (url === undefined) throw refuse(`${where}: an image_url part needs image_url.url`);
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  // JSON carries Converse's binary `bytes` as base64: the data URL's payload goes as it is.
  if (data) return { image: { format: imageFormat(data[1], where), source: { bytes: data[2] } } };
  if (url.startsWith("s3://")) {
    // An S3 object's format is read from its name, as Converse needs it said.
    const extension = /^s3:\/\/[^/]+\/.*\.([a-z0-9]+)$/i.exec(url)?.[1];
    if (!extension) throw refuse(`${where}: an s3:// image needs a file name ending in .png, .jpeg, .gif or .webp, not ${describe(url)}`);
    return { image: { format: imageFormat(`image/${extension}`, where), source: { s3Location: { uri: url } } } };
  }
  throw refuse(`${where}: Bedrock takes images as base64 data: URLs (data:image/png;base64,...) or s3:// locations, not ${describe(url)}`);
}

/** User/assistant content -> Converse content blocks. */
function contentBlocks(content: unknown, where: string): Block[] {
  if (typeof content === "string") return content.trim() === "" ? [] : [{ text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw refuse(`${where}: content must be a string or an array of parts`);
  return content.flatMap((part, i) => {
    const at = `${where}.content[${i}]`;
    if (!isRecord(part)) throw refuse(`${at}: a part must be an object`);
    if (part.type === "text") {
      const text = typeof part.text === "string" ? part.text : "";
      return withCachePoint(text.trim() === "" ? [] : [{ text }], part);
    }
    if (part.type === "image_url") return withCachePoint([imageBlock(part, at)], part);
    throw refuse(`${at}: Bedrock cannot take a "${String(part.type)}" part here; send text or image_url parts`);
  });
}

/** The text of a system/developer/tool message: a string, or its text parts joined. */
function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (isRecord(part) && typeof part.text === "string" ? part.text : "")).join("");
  if (content === null || content === undefined) return "";
  throw refuse(`${where}: content must be a string or an array of text parts`);
}

/** A system/developer message as system blocks (one per text part, so cache markers keep their place). */
function systemBlocks(message: JsonObject, where: string): Block[] {
  const content = message.content;
  const parts = Array.isArray(content) ? content.filter(isRecord) : [{ text: textOf(content, where) }];
  const blocks = parts.flatMap((part) => withCachePoint(typeof part.text === "string" && part.text.trim() !== "" ? [{ text: part.text }] : [], part));
  return withCachePoint(blocks, message);
}

function toolUseBlocks(toolCalls: unknown, where: string): Block[] {
  if (toolCalls === undefined || toolCalls === null) return [];
  if (!Array.isArray(toolCalls)) throw refuse(`${where}.tool_calls must be an array`);
  return toolCalls.map((call, i) => {
    const fn = isRecord(call) && isRecord(call.function) ? call.function : undefined;
    if (!isRecord(call) || !fn || typeof fn.name !== "string") throw refuse(`${where}.tool_calls[${i}]: needs function.name`);
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
    return { toolUse: { toolUseId: String(call.id ?? ""), name: fn.name, input } };
  });
}

function toolResultBlock(message: JsonObject, where: string): Block {
  if (typeof message.tool_call_id !== "string" || message.tool_call_id === "") throw refuse(`${where}: a tool message needs tool_call_id`);
  return { toolResult: { toolUseId: message.tool_call_id, content: [{ text: textOf(message.content, where) }] } };
}

interface Turn {
  role: Role;
  content: Block[];
}

/** Appends `blocks` as a `role` turn, joining it to the previous turn of the same role. */
function push(turns: Turn[], role: Role, blocks: Block[]): void {
  if (blocks.length === 0) return;
  const last = turns[turns.length - 1];
  if (last?.role === role) last.content.push(...blocks);
  else turns.push({ role, content: blocks });
}

export function convertMessages(messages: unknown, systemField: unknown): { system: Block[]; messages: Turn[] } {
  if (!Array.isArray(messages)) throw refuse("messages must be an array");
  const system: Block[] = typeof systemField === "string" && systemField.trim() !== "" ? [{ text: systemField }] : [];
  const turns: Turn[] = [];
  messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(message)) throw refuse(`${where} must be an object`);
    const role = message.role;
    if (role === "system" || role === "developer") system.push(...systemBlocks(message, where));
    else if (role === "user") push(turns, "user", withCachePoint(contentBlocks(message.content, where), message));
    else if (role === "assistant") {
      push(turns, "assistant", withCachePoint([...contentBlocks(message.content, where), ...toolUseBlocks(message.tool_calls, where)], message));
    } else if (role === "tool") push(turns, "user", withCachePoint([toolResultBlock(message, where)], message));
    else throw refuse(`${where}: role "${String(role)}" has no Bedrock equivalent; use system, developer, user, assistant or tool`);
  });
  return { system, messages: turns };
}

function toolSpec(tool: unknown, i: number): Block[] {
  if (!isRecord(tool)) throw refuse(`tools[${i}] must be an object`);
  // A tool already in Converse's shape (`toolSpec` or `cachePoint`) goes as it is.
  if (isRecord(tool.toolSpec) || isRecord(tool.cachePoint)) return [tool];
  const fn = isRecord(tool.function) ? tool.function : undefined;
  if (!fn || typeof fn.name !== "string") throw refuse(`tools[${i}]: needs function.name`);
  const spec: JsonObject = { name: fn.name, inputSchema: { json: isRecord(fn.parameters) ? fn.parameters : { type: "object", properties: {} } } };
  if (typeof fn.description === "string" && fn.description !== "") spec.description = fn.description;
  return withCachePoint([{ toolSpec: spec }], tool);
}

function toolChoice(choice: unknown): JsonObject | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === "auto") return { auto: {} };
  if (choice === "required") return { any: {} };
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === "string") return { tool: { name: choice.function.name } };
  throw refuse(`"tool_choice" must be "auto", "required", "none" or {"type":"function","function":{"name":...}}, not ${describe(choice)}`);
}

const hasToolBlocks = (turns: Turn[]) => turns.some((turn) => turn.content.some((block) => isRecord(block.toolUse) || isRecord(block.toolResult)));

function toolConfig(body: JsonObject, turns: Turn[]): JsonObject | undefined {
  if (body.tools === undefined || body.tools === null) return undefined;
  if (!Array.isArray(body.tools)) throw refuse(`"tools" must be an array, not ${describe(body.tools)}`);
  if (body.tools.length === 0) return undefined;
  const tools = body.tools.flatMap((tool, i) => toolSpec(tool, i));
  // Converse has no "none": the tools go only when the conversation needs them declared.
  if (body.tool_choice === "none") return hasToolBlocks(turns) ? { tools } : undefined;
  const choice = toolChoice(body.tool_choice);
  return choice ? { tools, toolChoice: choice } : { tools };
}

function stopSequences(stop: unknown): string[] {
  if (typeof stop === "string") return [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === "string")) return stop as string[];
  throw refuse(`"stop" must be a string or an array of strings, not ${describe(stop)}`);
}

/** A token limit the client set: a positive integer, else 400. Absent or null: not set. */
function tokenLimit(body: JsonObject, field: "max_tokens" | "max_completion_tokens"): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  throw refuse(`"${field}" must be a positive integer, not ${describe(value)}`);
}

function numberField(body: JsonObject, field: "temperature" | "top_p"): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number") throw refuse(`"${field}" must be a number, not ${describe(value)}`);
  return value;
}

function inferenceConfig(body: JsonObject): JsonObject | undefined {
  const config: JsonObject = {};
  const maxTokens = tokenLimit(body, "max_completion_tokens") ?? tokenLimit(body, "max_tokens");
  if (maxTokens !== undefined) config.maxTokens = maxTokens;
  const temperature = numberField(body, "temperature");
  if (temperature !== undefined) config.temperature = temperature;
  const topP = numberField(body, "top_p");
  if (topP !== undefined) config.topP = topP;
  if (body.stop !== undefined && body.stop !== null) {
    const stops = stopSequences(body.stop);
    if (stops.length > 0) config.stopSequences = stops;
  }
  return Object.keys(config).length > 0 ? config : undefined;
}

export function chatToConverseRequest(body: JsonObject): JsonObject {
  const { system, messages } = convertMessages(body.messages, body.system);
  const out: JsonObject = { messages };
  if (system.length > 0) out.system = system;
  const inference = inferenceConfig(body);
  if (inference) out.inferenceConfig = inference;
  const tools = toolConfig(body, messages);
  if (tools) out.toolConfig = tools;
  return out;
}
