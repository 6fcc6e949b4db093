/**
 * Chat-completions request -> local runtime `/api/chat` request.
 *
 * | chat completions                                | `/api/chat`                                     |
 * |-------------------------------------------------|-------------------------------------------------|
 * | `model`, `tools` (function schema)              | the same                                        |
 * | `messages[]` string content                     | the same                                        |
 * | `messages[]` content parts                      | `content` (text parts joined) + `images[]` (base64 of data: URLs) |
 * | assistant `tool_calls[].function.arguments` (JSON string) | `tool_calls[].function.arguments` (object) |
 * | `tool` message `tool_call_id`                   | `tool_name` (the name of the call it answers)   |
 * | `stream` (absent = false)                       | `stream` (always sent: the runtime streams by default) |
 * | `temperature`, `top_p`, `seed`, `presence_penalty`, `frequency_penalty` | `options.*` (same names) |
 * | `stop` string or array                          | `options.stop[]`                                |
 * | `max_completion_tokens`, else `max_tokens`      | `options.num_predict`                           |
 * | `response_format` json_object / json_schema     | `format` "json" / the schema                    |
 *
 * Other fields are dropped.
 */
import { isRecord, type JsonObject } from "../../core/llm/provider.ts";

function textAndImages(content: unknown): { content: string; images: string[] } {
  if (typeof content === "string") return { content, images: [] };
  if (!Array.isArray(content)) return { content: "", images: [] };
  const texts: string[] = [];
  const images: string[] = [];
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === "text" && typeof part.text === "string") texts.push(part.text);
    if (part.type === "image_url") {
      const url = isRecord(part.image_url) ? part.image_url.url : part.image_url;
      const data = typeof url === "string" ? /^data:[^;,]+;base64,(.*)$/s.exec(url) : null;
      // The runtime takes inline images only; a remote URL cannot be passed on.
      if (!data) throw new Error("local_chat takes images as data: URLs (base64) only");
      images.push(data[1]);
    }
  }
  return { content: texts.join(""), images };
}

function toolCalls(calls: unknown, names: Map<string, string>): JsonObject[] | undefined {
  if (!Array.isArray(calls)) return undefined;
  return calls.filter(isRecord).map((call) => {
    const fn = isRecord(call.function) ? call.function : {};
    const name = String(fn.name ?? "");
    if (typeof call.id === "string") names.set(call.id, name);
    let args: unknown = isRecord(fn.arguments) ? fn.arguments : {};
    if (typeof fn.arguments === "string" && fn.arguments.trim() !== "") {
      try {
        args = JSON.parse(fn.arguments);
      } catch {
        throw new Error(`tool call "${name}": function.arguments is not valid JSON`);
      }
    }
    return { function: { name, arguments: args } };
  });
}

function convertMessages(messages: unknown): JsonObject[] {
  if (!Array.isArray(messages)) throw new Error("messages must be an array");
  const toolNames = new Map<string, string>();
  return messages.map((message, i) => {
    if (!isRecord(message)) throw new Error(`messages[${i}] must be an object`);
    const { content, images } = textAndImages(message.content);
    const out: JsonObject = { role: message.role === "developer" ? "system" : message.role, content };
    if (images.length > 0) out.images = images;
    const calls = toolCalls(message.tool_calls, toolNames);
    if (calls && calls.length > 0) out.tool_calls = calls;
    if (message.role === "tool" && typeof message.tool_call_id === "string") {
      const name = toolNames.get(message.tool_call_id);
      if (name !== undefined) out.tool_name = name;
    }
    return out;
  });
}

function format(responseFormat: unknown): unknown {
  if (!isRecord(responseFormat)) return undefined;
  if (responseFormat.type === "json_object") return "json";
  if (responseFormat.type === "json_schema" && isRecord(responseFormat.json_schema)) return responseFormat.json_schema.schema;
  return undefined;
}

const OPTION_NAMES = ["temperature", "top_p", "seed", "presence_penalty", "frequency_penalty"] as const;

export function chatToLocalRequest(body: JsonObject): JsonObject {
  const out: JsonObject = { model: body.model, messages: convertMessages(body.messages), stream: body.stream === true };
  const options: JsonObject = {};
  for (const name of OPTION_NAMES) if (typeof body[name] === "number") options[name] = body[name];
  if (typeof body.stop === "string") options.stop = [body.stop];
  else if (Array.isArray(body.stop)) options.stop = body.stop;
  const limit = typeof body.max_completion_tokens === "number" ? body.max_completion_tokens : body.max_tokens;
  if (typeof limit === "number") options.num_predict = limit;
  if (Object.keys(options).length > 0) out.options = options;
  if (Array.isArray(body.tools)) out.tools = body.tools;
  const wanted = format(body.response_format);
  if (wanted !== undefined) out.format = wanted;
  return out;
}
