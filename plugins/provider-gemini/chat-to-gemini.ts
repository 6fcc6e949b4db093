/**
 * Chat-completions request -> Gemini `generateContent` body (Google AI Studio and Vertex AI take
 * the same body; the model and `stream` are in the URL, not in it).
 *
 * | chat completions                                   | Gemini                                                 |
 * |----------------------------------------------------|--------------------------------------------------------|
 * | `system` / `developer` messages, a `system` field  | `systemInstruction.parts[]` (one text part each)       |
 * | `user` message                                     | `contents[]` {role:"user", parts}                      |
 * | `assistant` message                                | `contents[]` {role:"model", parts}                     |
 * | `text` part / string content                       | `{text}`                                               |
 * | `image_url` data: URL                              | `{inlineData:{mimeType, data}}`                        |
 * | `image_url` https:// or gs:// URL                  | `{fileData:{mimeType, fileUri}}` (type from the extension) |
 * | `input_audio` {data, format wav/mp3}               | `{inlineData:{mimeType:"audio/wav" / "audio/mp3", data}}` |
 * | `file` {file_data: data: URL}                      | `{inlineData}`                                         |
 * | assistant `tool_calls[]`                           | `{functionCall:{name, args}}` parts (+ `thoughtSignature`, see below) |
 * | `tool` messages (results of one turn)              | one user content of `{functionResponse:{name, response}}` parts |
 * | `tools[] {type:"function", function}`              | `tools[0].functionDeclarations[] {name, description, parametersJsonSchema}` |
 * | a tool without `type` (`{googleSearch:{}}`, ...)   | kept as a Gemini tool                                  |
 * | `tool_choice` auto / none / required / {function}  | `toolConfig.functionCallingConfig.mode` AUTO / NONE / ANY / ANY + `allowedFunctionNames` |
 * | `max_completion_tokens`, else `max_tokens`         | `generationConfig.maxOutputTokens`                     |
 * | `temperature`, `top_p`, `top_k`, `seed`            | `temperature`, `topP`, `topK`, `seed`                  |
 * | `presence_penalty`, `frequency_penalty`            | `presencePenalty`, `frequencyPenalty`                  |
 * | `stop` (string or array)                           | `stopSequences[]`                                      |
 * | `n`                                                | `candidateCount`                                       |
 * | `response_format` json_object                      | `responseMimeType: "application/json"`                 |
 * | `response_format` json_schema {schema}             | the same + `responseJsonSchema` (JSON Schema as sent; `responseSchema` takes only an OpenAPI subset) |
 *
 * Function parameters go as `parametersJsonSchema` for the same reason. Thought signatures: a
 * Gemini 3 model refuses a conversation whose function-call turn lost the signature it sent;
 * answers carry it in `tool_calls[].extra_content.google.thought_signature` (the field Google's
 * own chat-completions endpoint uses) and it goes back as the part's `thoughtSignature`. A
 * turn whose calls carry none (another model's history, a client that dropped the field) gets
 * Google's documented placeholder on its first call, which skips that check.
 *
 * Tool-call ids are not sent: Gemini pairs a result with its call by name and order, and an id
 * it never issued could be refused. Dropped: `model`, `stream`, `stream_options`, `user`,
 * `metadata`, `store`, `logprobs`, `top_logprobs`, `logit_bias`, `parallel_tool_calls`,
 * `reasoning_effort` and anything else without a Gemini field.
 */
import { isRecord, type JsonObject } from "../../core/llm/provider.ts";
import { audioPart, filePart, imagePart, type Part } from "./media-parts.ts";
import { describe, integer, number, positiveInteger, refuse, stopSequences } from "./request-fields.ts";

interface Content {
  role: "user" | "model";
  parts: Part[];
}

/** Google's documented stand-in for a thought signature the conversation does not have. */
export const SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator";

/** User content (a string or parts) as Gemini parts. */
function userParts(content: unknown, where: string): Part[] {
  if (typeof content === "string") return content === "" ? [] : [{ text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw refuse(`${where}: content must be a string or an array of parts`);
  return content.map((part, i) => {
    const at = `${where}.content[${i}]`;
    if (!isRecord(part)) throw refuse(`${at}: a part must be an object`);
    switch (part.type) {
      case "text":
        return { text: typeof part.text === "string" ? part.text : "" };
      case "image_url":
        return imagePart(part, at);
      case "input_audio":
        return audioPart(part, at);
      case "file":
        return filePart(part, at);
      default:
        throw refuse(`${at}: part type ${describe(part.type)} has no Gemini equivalent; use text, image_url, input_audio or file`);
    }
  });
}

/** The text of a system, developer, assistant or tool message: a string, or its text parts joined. */
function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (Array.isArray(content)) return content.map((part) => (isRecord(part) && typeof part.text === "string" ? part.text : "")).join("");
  throw refuse(`${where}: content must be a string or an array of text parts`);
}

function signatureOf(call: JsonObject): string | undefined {
  const extra = isRecord(call.extra_content) && isRecord(call.extra_content.google) ? call.extra_content.google : undefined;
  return typeof extra?.thought_signature === "string" ? extra.thought_signature : undefined;
}

function argumentsOf(fn: JsonObject, where: string): JsonObject {
  if (isRecord(fn.arguments)) return fn.arguments;
  if (typeof fn.arguments !== "string" || fn.arguments.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(fn.arguments);
  } catch {
    throw refuse(`${where}.function.arguments is not valid JSON`);
  }
  if (!isRecord(parsed)) throw refuse(`${where}.function.arguments must be a JSON object, not ${describe(parsed)}`);
  return parsed;
}

/** Assistant tool calls as functionCall parts; remembers each call's name for its result. */
function functionCallParts(toolCalls: unknown, where: string, names: Map<string, string>): Part[] {
  if (toolCalls === undefined || toolCalls === null) return [];
  if (!Array.isArray(toolCalls)) throw refuse(`${where}.tool_calls must be an array`);
  const parts = toolCalls.map((call, i): Part => {
    const at = `${where}.tool_calls[${i}]`;
    const fn = isRecord(call) && isRecord(call.function) ? call.function : undefined;
    if (!isRecord(call) || !fn || typeof fn.name !== "string" || fn.name === "") throw refuse(`${at}: needs function.name`);
    if (typeof call.id === "string") names.set(call.id, fn.name);
    const signature = signatureOf(call);
    return { functionCall: { name: fn.name, args: argumentsOf(fn, at) }, ...(signature !== undefined ? { thoughtSignature: signature } : {}) };
  });
  if (parts.length > 0 && parts.every((part) => part.thoughtSignature === undefined)) parts[0] = { ...parts[0], thoughtSignature: SKIP_THOUGHT_SIGNATURE };
  return parts;
}

/** A tool result's `response`: the JSON object the tool returned, else its text as `output`. */
function functionResponse(text: string): JsonObject {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) return parsed;
  } catch {
    // not JSON: plain text output
  }
  return { output: text };
}

function toolResultPart(message: JsonObject, where: string, names: Map<string, string>): Part {
  const id = typeof message.tool_call_id === "string" ? message.tool_call_id : undefined;
  const name = (id !== undefined ? names.get(id) : undefined) ?? (typeof message.name === "string" ? message.name : undefined);
  if (name === undefined) {
    throw refuse(
      `${where}: tool_call_id ${describe(message.tool_call_id)} matches no earlier assistant tool call; Gemini needs the function's name for a result`,
    );
  }
  return { functionResponse: { name, response: functionResponse(textOf(message.content, where)) } };
}

/** Adds parts as a turn of `role`; a turn of the same role as the previous one joins it. */
function append(contents: Content[], role: Content["role"], parts: Part[]): void {
  if (parts.length === 0) return;
  const last = contents[contents.length - 1];
  if (last?.role === role) last.parts.push(...parts);
  else contents.push({ role, parts });
}

export function convertMessages(messages: unknown, systemField: unknown): { system: Part[]; contents: Content[] } {
  if (!Array.isArray(messages)) throw refuse("messages must be an array");
  const system: Part[] = typeof systemField === "string" && systemField !== "" ? [{ text: systemField }] : [];
  const contents: Content[] = [];
  const names = new Map<string, string>();
  messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(message)) throw refuse(`${where} must be an object`);
    switch (message.role) {
      case "system":
      case "developer": {
        const text = textOf(message.content, where);
        if (text !== "") system.push({ text });
        return;
      }
      case "user":
        return append(contents, "user", userParts(message.content, where));
      case "assistant": {
        const text = textOf(message.content, where);
        const calls = functionCallParts(message.tool_calls, where, names);
        return append(contents, "model", [...(text !== "" ? [{ text }] : []), ...calls]);
      }
      case "tool":
        return append(contents, "user", [toolResultPart(message, where, names)]);
      default:
        throw refuse(`${where}: role ${describe(message.role)} has no Gemini equivalent; use system, developer, user, assistant or tool`);
    }
  });
  return { system, contents };
}

export function convertTools(tools: unknown): JsonObject[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw refuse('"tools" must be an array');
  const declarations: JsonObject[] = [];
  const native: JsonObject[] = [];
  tools.forEach((tool, i) => {
    if (!isRecord(tool)) throw refuse(`tools[${i}] must be an object`);
    if (tool.type === undefined) {
      native.push(tool);
      return;
    }
    if (tool.type !== "function") throw refuse(`tools[${i}]: tool type ${describe(tool.type)} has no Gemini equivalent; use "function"`);
    const fn = isRecord(tool.function) ? tool.function : undefined;
    if (!fn || typeof fn.name !== "string" || fn.name === "") throw refuse(`tools[${i}]: a function tool needs function.name`);
    const declaration: JsonObject = { name: fn.name };
    if (typeof fn.description === "string") declaration.description = fn.description;
    if (isRecord(fn.parameters)) declaration.parametersJsonSchema = fn.parameters;
    declarations.push(declaration);
  });
  const out = [...(declarations.length > 0 ? [{ functionDeclarations: declarations }] : []), ...native];
  return out.length > 0 ? out : undefined;
}

export function convertToolChoice(choice: unknown): JsonObject | undefined {
  if (choice === undefined || choice === null) return undefined;
  const mode = (config: JsonObject) => ({ functionCallingConfig: config });
  if (choice === "auto") return mode({ mode: "AUTO" });
  if (choice === "none") return mode({ mode: "NONE" });
  if (choice === "required") return mode({ mode: "ANY" });
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === "string") {
    return mode({ mode: "ANY", allowedFunctionNames: [choice.function.name] });
  }
  throw refuse(`"tool_choice" must be "auto", "none", "required" or {"type":"function","function":{"name":...}}, not ${describe(choice)}`);
}

function responseFormat(format: unknown): JsonObject {
  if (format === undefined || format === null) return {};
  if (!isRecord(format)) throw refuse(`"response_format" must be an object, not ${describe(format)}`);
  if (format.type === "text") return {};
  if (format.type === "json_object") return { responseMimeType: "application/json" };
  if (format.type === "json_schema") {
    const spec = isRecord(format.json_schema) ? format.json_schema : undefined;
    if (!spec || !isRecord(spec.schema)) throw refuse('"response_format" of type json_schema needs json_schema.schema (an object)');
    return { responseMimeType: "application/json", responseJsonSchema: spec.schema };
  }
  throw refuse(`"response_format.type" must be text, json_object or json_schema, not ${describe(format.type)}`);
}

function generationConfig(body: JsonObject): JsonObject {
  const config: JsonObject = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) config[key] = value;
  };
  set("maxOutputTokens", positiveInteger(body, "max_completion_tokens") ?? positiveInteger(body, "max_tokens"));
  set("temperature", number(body, "temperature"));
  set("topP", number(body, "top_p"));
  set("topK", positiveInteger(body, "top_k"));
  set("seed", integer(body, "seed"));
  set("presencePenalty", number(body, "presence_penalty"));
  set("frequencyPenalty", number(body, "frequency_penalty"));
  set("stopSequences", stopSequences(body));
  set("candidateCount", positiveInteger(body, "n"));
  return { ...config, ...responseFormat(body.response_format) };
}

export function chatToGeminiRequest(body: JsonObject): JsonObject {
  const { system, contents } = convertMessages(body.messages, body.system);
  const out: JsonObject = { contents };
  if (system.length > 0) out.systemInstruction = { parts: system };
  const tools = convertTools(body.tools);
  if (tools) out.tools = tools;
  const toolConfig = convertToolChoice(body.tool_choice);
  if (toolConfig) out.toolConfig = toolConfig;
  const config = generationConfig(body);
  if (Object.keys(config).length > 0) out.generationConfig = config;
  return out;
}
