/**
 * The per-request translator of `provider: vertex_ai`: Vertex AI serves Google's models with
 * the Gemini protocol and Anthropic's with the Messages API, so which translation applies is
 * decided by the request's (backend) model, with the same rule as its URL (urls.ts
 * `vertexPublisherOf`).
 */
import type { ProviderDefinition, Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { geminiTranslator } from "./gemini-translator.ts";
import { VERTEX_PUBLISHERS, vertexPublisherOf } from "./urls.ts";
import { vertexAnthropicTranslator } from "./vertex-anthropic.ts";

/** A translator whose every method is there (the ones this provider builds are). */
type Complete =
  & Required<Pick<Translator, "translateRequest" | "translateResponse" | "translateStreamEvent" | "streamProgress" | "translateError">>
  & Pick<Translator, "translateStreamEnd">;

function complete(translator: Translator): Complete {
  const { translateRequest, translateResponse, translateStreamEvent, streamProgress, translateError, translateStreamEnd } = translator;
  if (!translateRequest || !translateResponse || !translateStreamEvent || !streamProgress || !translateError) {
    throw new Error("a vertex_ai translator lacks a method");
  }
  return { translateRequest, translateResponse, translateStreamEvent, streamProgress, translateError, translateStreamEnd };
}

export function vertexTranslator(context: TranslatorContext, messagesProvider: ProviderDefinition): Translator {
  // Google's protocol until the request names an Anthropic model.
  let active = complete(geminiTranslator(context));
  return {
    translateRequest(body) {
      const publisher = typeof body.model === "string" ? vertexPublisherOf(body.model) : "google";
      if (!VERTEX_PUBLISHERS.has(publisher)) {
        throw new Error(`model "${String(body.model)}" is published by "${publisher}": the vertex_ai provider speaks to Google's models and Anthropic's only`);
      }
      if (publisher === "anthropic") active = complete(vertexAnthropicTranslator(context, messagesProvider));
      return active.translateRequest(body);
    },
    translateResponse: (body) => active.translateResponse(body),
    translateStreamEvent: (event) => active.translateStreamEvent(event),
    translateStreamEnd: () => active.translateStreamEnd?.() ?? [],
    streamProgress: () => active.streamProgress(),
    translateError: (status, body) => active.translateError(status, body),
  };
}
