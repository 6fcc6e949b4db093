/**
 * Gemini `GenerateContentResponse` -> chat-completions response.
 *
 * | Gemini                                            | chat completions                                   |
 * |---------------------------------------------------|----------------------------------------------------|
 * | `candidates[i]`                                   | `choices[i]` (index from `candidates[i].index`)    |
 * | `content.parts[].text` (not `thought: true`)      | `message.content` (joined; null when the answer is only tool calls) |
 * | `content.parts[].functionCall {id?, name, args}`  | `message.tool_calls[] {id, type:"function", function:{name, arguments: JSON string}}`; an id is made up when Gemini sends none |
 * | the part's `thoughtSignature`                     | the tool call's `extra_content.google.thought_signature` |
 * | `finishReason` STOP                               | stop (tool_calls when the candidate calls a function) |
 * | MAX_TOKENS                                        | length                                             |
 * | SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT, IMAGE_RECITATION | content_filter |
 * | any other (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL, ...) | stop                                       |
 * | `usageMetadata`                                   | `usage` (see gemini-usage.ts)                      |
 * | `responseId`, `modelVersion`                      | `id`, `model`                                      |
 * | `promptFeedback.blockReason`, no candidates       | an error (see prompt-block.ts)                     |
 *
 * Thought summaries, code-execution parts, inline media in the answer, grounding and citation
 * metadata, safety ratings and log probabilities have no place in a chat completion and are left out.
 */
import {
  chatCompletion,
  type ChatMessage,
  type ChatToolCall,
  type FinishReason,
  isRecord,
  type JsonObject,
  type TranslatedResponse,
  type TranslatorContext,
} from "../../core/llm/provider.ts";
import { chatUsage, geminiUsage } from "./gemini-usage.ts";
import { PromptBlockedError, promptBlockOf } from "./prompt-block.ts";

const FILTERED = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
]);

/** A candidate's `finishReason`; null while it has none (a stream still going). */
export function finishReason(reason: unknown): FinishReason | null {
  if (typeof reason !== "string" || reason === "") return null;
  if (reason === "MAX_TOKENS") return "length";
  if (FILTERED.has(reason)) return "content_filter";
  // STOP and every other reason: the model stopped, nothing was cut or filtered.
  return "stop";
}

/** A chat tool call, with the thought signature Gemini 3 wants back on the next turn. */
export interface GeminiToolCall extends ChatToolCall {
  extra_content?: { google: { thought_signature: string } };
}

/** A candidate's parts (objects only). */
export function partsOf(candidate: unknown): JsonObject[] {
  const content = isRecord(candidate) && isRecord(candidate.content) ? candidate.content : undefined;
  return Array.isArray(content?.parts) ? content.parts.filter(isRecord) : [];
}

/** A part that is answer text (thought summaries are not). */
export function answerText(part: JsonObject): string | undefined {
  return typeof part.text === "string" && part.thought !== true ? part.text : undefined;
}

export function toolCallOf(part: JsonObject, newId: () => string): GeminiToolCall | undefined {
  const call = isRecord(part.functionCall) ? part.functionCall : undefined;
  if (!call) return undefined;
  const out: GeminiToolCall = {
    id: typeof call.id === "string" && call.id !== "" ? call.id : `call_${newId()}`,
    type: "function",
    function: { name: String(call.name ?? ""), arguments: JSON.stringify(isRecord(call.args) ? call.args : {}) },
  };
  if (typeof part.thoughtSignature === "string") out.extra_content = { google: { thought_signature: part.thoughtSignature } };
  return out;
}

/** A finish reason, as tool_calls when the model stopped to call functions. */
export function choiceFinish(reason: unknown, calledTools: boolean): FinishReason | null {
  const mapped = finishReason(reason);
  return mapped === "stop" && calledTools ? "tool_calls" : mapped;
}

function choiceOf(candidate: unknown, position: number, newId: () => string): { index: number; message: ChatMessage; finish: FinishReason | null } {
  const parts = partsOf(candidate);
  const texts = parts.map(answerText).filter((text): text is string => text !== undefined);
  const toolCalls = parts.map((part) => toolCallOf(part, newId)).filter((call): call is GeminiToolCall => call !== undefined);
  const index = isRecord(candidate) && typeof candidate.index === "number" ? candidate.index : position;
  const message: ChatMessage = {
    role: "assistant",
    content: texts.length === 0 && toolCalls.length > 0 ? null : texts.join(""),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
  return { index, message, finish: choiceFinish(isRecord(candidate) ? candidate.finishReason : undefined, toolCalls.length > 0) };
}

export function geminiToChatResponse(body: unknown, context: TranslatorContext): TranslatedResponse {
  if (!isRecord(body)) throw new Error("the backend answer is not a Gemini GenerateContentResponse (not an object)");
  const block = promptBlockOf(body);
  if (block) throw new PromptBlockedError(block);
  if (!Array.isArray(body.candidates) || body.candidates.length === 0) {
    throw new Error("the backend answer is not a Gemini GenerateContentResponse (no candidates)");
  }
  const choices = body.candidates.map((candidate, i) => choiceOf(candidate, i, context.newId));
  const counted = geminiUsage(body.usageMetadata);
  const chat = chatCompletion({
    id: typeof body.responseId === "string" ? body.responseId : `chatcmpl-${context.newId()}`,
    createdMs: context.now(),
    model: body.modelVersion,
    message: choices[0].message,
    finishReason: choices[0].finish,
    usage: counted?.usage,
  });
  chat.choices = choices.map((choice) => ({ index: choice.index, message: choice.message, logprobs: null, finish_reason: choice.finish }));
  if (counted) chat.usage = chatUsage(counted);
  return { body: chat, usage: counted?.usage };
}
