/**
 * The per-request translator of Google's Gemini protocol (AI Studio and Vertex AI alike):
 * chat completions to `generateContent` and back, streams and errors included.
 */
import { type JsonObject, type Translator, type TranslatorContext, wantsStreamUsage } from "../../core/llm/provider.ts";
import { chatToGeminiRequest } from "./chat-to-gemini.ts";
import { GeminiStreamTranslator } from "./gemini-stream-to-chat.ts";
import { geminiToChatResponse } from "./gemini-to-chat.ts";
import { googleToChatError } from "./google-errors.ts";

export function geminiTranslator(context: TranslatorContext): Translator {
  let includeUsage = false;
  const stream = new GeminiStreamTranslator(context, () => includeUsage);
  return {
    translateRequest(body: JsonObject) {
      // Remembered for the stream: the usage chunk is sent only when the client asked for it.
      includeUsage = wantsStreamUsage(body);
      return chatToGeminiRequest(body);
    },
    translateResponse: (body) => geminiToChatResponse(body, context),
    translateStreamEvent: (event) => stream.event(event),
    translateStreamEnd: () => stream.end(),
    streamProgress: () => stream.progress(),
    translateError: googleToChatError,
  };
}
