/**
 * `provider: bedrock`: Amazon Bedrock's Converse and ConverseStream APIs. Clients keep speaking
 * chat completions (or Messages, which the gateway turns into chat completions first);
 * requests, responses, errors and streams are translated both ways (the tables are in the
 * files named by the protocol pair).
 *
 * Bedrock needs more than a translator: the model is in the URL, every request is signed (or
 * carries a Bedrock API key), and streams are binary event-stream frames. Those parts are
 * exported here for the LLM proxy to call (README.md, "Wiring"); until it does, this provider
 * is not registered.
 */
import type {
  JsonObject,
  OutEvent,
  ProviderDefinition,
  StreamEvent,
  StreamProgress,
  TranslatedResponse,
  Translator,
  TranslatorContext,
} from "../../core/llm/provider.ts";
import { wantsStreamUsage } from "../../core/llm/provider.ts";
import { chatToConverseRequest } from "./chat-to-converse.ts";
import { converseToChatError, type ErrorHeaders } from "./converse-errors.ts";
import { ConverseStreamTranslator } from "./converse-stream-to-chat.ts";
import { converseToChatResponse } from "./converse-to-chat.ts";

export { isContextWindowError } from "./context-window.ts";
export { EventStreamDecoder } from "./event-stream.ts";
export { type BedrockAttempt, type BedrockBackendSettings, prepareBedrockRequest } from "./backend-request.ts";
export { type SignableRequest, signBedrockRequest } from "./sigv4.ts";
export { bedrockModelUrl, bedrockRuntimeUrl } from "./urls.ts";
export { type AwsCredentials, type BedrockAuth, bedrockAuth, createCredentialChain, sharedCredentialChain } from "./credentials.ts";

/** The media type of a ConverseStream answer. */
export const EVENT_STREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream";

/** The translator with every method there, and `translateError` taking the answer's headers. */
export interface BedrockTranslator extends Translator {
  translateRequest(body: JsonObject): JsonObject;
  translateResponse(body: unknown): TranslatedResponse;
  translateStreamEvent(event: StreamEvent): OutEvent[];
  translateStreamEnd(): OutEvent[];
  streamProgress(): StreamProgress;
  translateError(status: number, body: unknown, headers?: ErrorHeaders): JsonObject;
}

export const bedrockProvider = {
  name: "bedrock",
  // Per region (`bedrockRuntimeUrl`): there is no one default address.
  defaultUrl: "",
  createTranslator(context: TranslatorContext): BedrockTranslator {
    let includeUsage = false;
    let model = "";
    const stream = new ConverseStreamTranslator(context, () => model, () => includeUsage);
    return {
      translateRequest(body: JsonObject) {
        // Remembered: Converse answers name no model, and the usage chunk is sent only when asked for.
        includeUsage = wantsStreamUsage(body);
        model = typeof body.model === "string" ? body.model : "";
        return chatToConverseRequest(body);
      },
      translateResponse: (body) => converseToChatResponse(body, context, model),
      translateStreamEvent: (event) => stream.event(event),
      translateStreamEnd: () => stream.end(),
      streamProgress: () => stream.progress(),
      // The third argument (the answer's headers, where Bedrock names the error) is optional until the proxy passes it.
      translateError: (status: number, body: unknown, headers?: ErrorHeaders) => converseToChatError(status, body, headers),
    };
  },
} satisfies ProviderDefinition;
