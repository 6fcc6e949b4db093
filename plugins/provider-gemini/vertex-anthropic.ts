/**
 * Anthropic's models on Vertex AI speak the Messages API (`rawPredict` / `streamRawPredict`,
 * see urls.ts) with two differences: the model is in the URL, not the body, and the API
 * version is a body field, `anthropic_version: "vertex-2023-10-16"`, not a header. Everything
 * else (the translation both ways, streams, usage with cache counts) is the `messages_api`
 * provider's own translator.
 *
 * Errors come in two shapes: Vertex AI's front end answers Google's (authentication, quota,
 * an unknown model), the model server Anthropic's (`{"type":"error","error":{type, message}}`).
 */
import { isRecord, type JsonObject, type ProviderDefinition, type Translator, type TranslatorContext } from "../../core/llm/provider.ts";
import { googleToChatError } from "./google-errors.ts";

export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";

/** A Messages request body as Vertex AI takes it. */
export function toVertexAnthropicBody(body: JsonObject): JsonObject {
  const { model: _model, ...rest } = body;
  return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest };
}

/** Whether an error body is the Messages API's own (else it is Google's). */
const isMessagesError = (body: unknown) => isRecord(body) && body.type === "error";

/** `messages`: the registered `messages_api` provider (a plugin does not import another's folder). */
export function vertexAnthropicTranslator(context: TranslatorContext, messagesProvider: ProviderDefinition): Translator {
  const messages = messagesProvider.createTranslator(context);
  const { translateRequest, translateError } = messages;
  if (!translateRequest || !translateError) throw new Error("the messages_api provider no longer translates requests and errors");
  return {
    ...messages,
    translateRequest: (body) => toVertexAnthropicBody(translateRequest(body)),
    translateError: (status, body) => (isMessagesError(body) ? translateError(status, body) : googleToChatError(status, body)),
  };
}
