/**
 * A Responses request (its conversation items already rebuilt: the stored chain, then the new
 * input) -> the chat-completions request a provider that does not speak the Responses API
 * gets (its translator then takes it from there).
 *
 * | Responses                                              | chat completions                                   |
 * |--------------------------------------------------------|----------------------------------------------------|
 * | `instructions`                                         | a first `system` message                           |
 * | `message` user / system / developer                    | a `user` / `system` / `system` message             |
 * | `input_text` / `input_image` parts                     | `text` / `image_url` parts                         |
 * | `message` assistant (`output_text`, `refusal` parts)    | an `assistant` message (the texts joined)          |
 * | `function_call {call_id, name, arguments}`             | `tool_calls[]` of an assistant message             |
 * | `function_call_output {call_id, output}`               | a `tool` message                                   |
 * | `reasoning` items                                      | left out (the model's own notes)                   |
 * | `tools[] {type:"function", name, description, parameters, strict}` | `tools[] {type:"function", function:{...}}` |
 * | `tool_choice` auto / none / required / {type:"function", name} | the same / {type:"function", function:{name}} |
 * | `parallel_tool_calls`, `temperature`, `top_p`, `user`, `stream` | the same                                  |
 * | `max_output_tokens`                                    | `max_completion_tokens`                            |
 * | `text.format` json_schema / json_object                | `response_format` json_schema / json_object        |
 * | `reasoning.effort`                                     | `reasoning_effort`                                 |
 *
 * Refused with 400 (they cannot be honoured on this path): other tool types (web search, file
 * search, ...), `input_file` / `input_audio` parts, `item_reference` and the other item types,
 * `background: true`. Kept by the gateway and not sent: `metadata`, `store`,
 * `previous_response_id`, `include`, `truncation`.
 */
import { shownValue as describe, UntranslatableRequest } from "../../core/llm/client-protocol.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";

const refuse = (message: string) => new UntranslatableRequest(message);

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((
    part,
  ) => (isRecord(part) && typeof part.text === "string" ? part.text : isRecord(part) && typeof part.refusal === "string" ? part.refusal : ""))
    .join("");
}

function inputPart(part: JsonObject, at: string): JsonObject {
  if (part.type === "input_text" || part.type === "output_text") return { type: "text", text: typeof part.text === "string" ? part.text : "" };
  if (part.type === "input_image") {
    if (typeof part.image_url !== "string") {
      throw refuse(`${at}: an input_image needs "image_url" (a URL or a data: URL); file ids cannot be sent to this model's backend`);
    }
    const image: JsonObject = { url: part.image_url };
    if (typeof part.detail === "string") image.detail = part.detail;
    return { type: "image_url", image_url: image };
  }
  throw refuse(`${at}: a ${JSON.stringify(part.type)} part cannot be sent to this model's backend; use input_text or input_image`);
}

function userContent(content: unknown, at: string): unknown {
  if (typeof content === "string") return content;
  const parts = (content as unknown[]).map((part, i) => inputPart(part as JsonObject, `${at}.content[${i}]`));
  // Text alone goes as a string: every chat backend takes that.
  return parts.every((part) => part.type === "text") ? parts.map((part) => part.text).join("") : parts;
}

/** The items as chat messages: function calls folded into the assistant turn they follow. */
function messagesOf(items: readonly JsonObject[], stored: number): JsonObject[] {
  const messages: JsonObject[] = [];
  const lastAssistant = () => {
    const last = messages[messages.length - 1];
    return last?.role === "assistant" ? last : undefined;
  };
  items.forEach((item, i) => {
    const at = i >= stored ? `input[${i - stored}]` : `the stored conversation's item ${i}`;
    const type = item.type ?? "message";
    if (type === "message") {
      if (item.role === "assistant") messages.push({ role: "assistant", content: textOf(item.content) });
      else messages.push({ role: item.role === "user" ? "user" : "system", content: userContent(item.content, at) });
    } else if (type === "function_call") {
      const call = { id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } };
      const turn = lastAssistant();
      if (turn) turn.tool_calls = [...(Array.isArray(turn.tool_calls) ? turn.tool_calls : []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (type === "function_call_output") {
      const output = typeof item.output === "string" ? item.output : textOf(item.output) || JSON.stringify(item.output);
      messages.push({ role: "tool", tool_call_id: item.call_id, content: output });
    } else if (type !== "reasoning") {
      throw refuse(`${at}: a ${JSON.stringify(type)} item cannot be sent to this model's backend; use message, function_call or function_call_output`);
    }
  });
  // An assistant turn that is only tool calls has no text.
  for (const message of messages) if (message.role === "assistant" && message.tool_calls && message.content === "") message.content = null;
  return messages;
}

function tools(value: unknown[]): JsonObject[] {
  return value.map((tool, i) => {
    if (!isRecord(tool) || tool.type !== "function" || typeof tool.name !== "string") {
      const type = isRecord(tool) ? tool.type : undefined;
      throw refuse(`tools[${i}]: only function tools {type:"function", name, parameters} can be sent to this model's backend, not ${describe(type ?? tool)}`);
    }
    const fn: JsonObject = { name: tool.name, parameters: isRecord(tool.parameters) ? tool.parameters : { type: "object", properties: {} } };
    if (typeof tool.description === "string") fn.description = tool.description;
    if (typeof tool.strict === "boolean") fn.strict = tool.strict;
    return { type: "function", function: fn };
  });
}

function toolChoice(choice: unknown): unknown {
  if (typeof choice === "string") return choice;
  if (isRecord(choice) && choice.type === "function" && typeof choice.name === "string") return { type: "function", function: { name: choice.name } };
  throw refuse(`"tool_choice" must be "auto", "none", "required" or {type:"function", name}, not ${describe(choice)}`);
}

function responseFormat(format: unknown): JsonObject | undefined {
  if (!isRecord(format) || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type === "json_schema") {
    const schema: JsonObject = { name: typeof format.name === "string" ? format.name : "response", schema: format.schema };
    if (typeof format.strict === "boolean") schema.strict = format.strict;
    if (typeof format.description === "string") schema.description = format.description;
    return { type: "json_schema", json_schema: schema };
  }
  throw refuse(`"text.format" must be {type:"text"}, {type:"json_object"} or {type:"json_schema", name, schema}, not ${describe(format)}`);
}

const present = (value: unknown) => value !== undefined && value !== null;

/** `conversation`: the `stored` items of the chain, then this request's input items. */
export function responsesToChatRequest(body: JsonObject, conversation: readonly JsonObject[], stored = 0): JsonObject {
  if (body.background === true) throw refuse(`"background": true is not supported by this gateway; send the request without it (or stream it)`);
  const messages: JsonObject[] = [];
  if (typeof body.instructions === "string" && body.instructions !== "") messages.push({ role: "system", content: body.instructions });
  messages.push(...messagesOf(conversation, stored));
  const out: JsonObject = { model: body.model, messages };
  if (body.stream === true) out.stream = true;
  if (present(body.max_output_tokens)) out.max_completion_tokens = body.max_output_tokens;
  for (const key of ["temperature", "top_p", "parallel_tool_calls", "user"] as const) if (present(body[key])) out[key] = body[key];
  if (Array.isArray(body.tools) && body.tools.length > 0) out.tools = tools(body.tools);
  if (present(body.tool_choice)) out.tool_choice = toolChoice(body.tool_choice);
  const format = isRecord(body.text) ? responseFormat(body.text.format) : undefined;
  if (format) out.response_format = format;
  if (isRecord(body.reasoning) && typeof body.reasoning.effort === "string") out.reasoning_effort = body.reasoning.effort;
  return out;
}
