/**
 * The texts a model reads or writes, in a chat-completions body: message contents (strings and
 * text parts; system prompts and tool results are messages too), tool call arguments, and the
 * `input` / `prompt` of embeddings and completions. Images, audio and files are not read
 * (docs/guardrails.md#what-is-inspected). `write` returns a copy with the texts replaced.
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";

type Holder = Record<string, unknown> | unknown[];
interface Slot {
  holder: Holder;
  key: string | number;
}

function slot(holder: Holder, key: string | number, slots: Slot[]): void {
  const value = (holder as Record<string | number, unknown>)[key];
  if (typeof value === "string") slots.push({ holder, key });
}

/** A `content` string, or its text parts. */
function contentSlots(holder: Record<string, unknown>, slots: Slot[]): void {
  const content = holder.content;
  if (typeof content === "string") slots.push({ holder, key: "content" });
  else if (Array.isArray(content)) {
    for (const part of content) if (isRecord(part) && (part.type === "text" || part.type === undefined)) slot(part, "text", slots);
  }
}

function toolCallSlots(message: Record<string, unknown>, slots: Slot[]): void {
  if (!Array.isArray(message.tool_calls)) return;
  for (const call of message.tool_calls) if (isRecord(call) && isRecord(call.function)) slot(call.function, "arguments", slots);
}

function stringsOf(body: Record<string, unknown>, key: string, slots: Slot[]): void {
  const value = body[key];
  if (typeof value === "string") slots.push({ holder: body, key });
  else if (Array.isArray(value)) value.forEach((_, i) => slot(value, i, slots));
}

function requestSlots(body: JsonObject): Slot[] {
  const slots: Slot[] = [];
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (!isRecord(message)) continue;
      contentSlots(message, slots);
      toolCallSlots(message, slots);
    }
  }
  stringsOf(body, "input", slots);
  stringsOf(body, "prompt", slots);
  return slots;
}

function answerSlots(body: JsonObject): Slot[] {
  const slots: Slot[] = [];
  if (!Array.isArray(body.choices)) return slots;
  for (const choice of body.choices) {
    if (!isRecord(choice)) continue;
    if (isRecord(choice.message)) {
      contentSlots(choice.message, slots);
      toolCallSlots(choice.message, slots);
    }
    slot(choice, "text", slots);
  }
  return slots;
}

export interface BodyTexts {
  readonly texts: string[];
  /** A copy of the body with `texts` (same order) in place of its texts. */
  write(texts: readonly string[]): JsonObject;
}

function bodyTexts(body: JsonObject, slotsOf: (body: JsonObject) => Slot[]): BodyTexts {
  const texts = slotsOf(body).map(({ holder, key }) => (holder as Record<string | number, unknown>)[key] as string);
  return {
    texts,
    write(next) {
      const copy = structuredClone(body);
      slotsOf(copy).forEach(({ holder, key }, i) => {
        (holder as Record<string | number, unknown>)[key] = next[i];
      });
      return copy;
    },
  };
}

export const requestTexts = (body: JsonObject): BodyTexts => bodyTexts(body, requestSlots);
export const answerTexts = (body: JsonObject): BodyTexts => bodyTexts(body, answerSlots);
