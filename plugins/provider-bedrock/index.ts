/**
 * `provider: bedrock`: Amazon Bedrock's Converse and ConverseStream APIs. Clients keep speaking
 * chat completions (or Messages, which the gateway turns into chat completions first);
 * requests, responses, errors and streams are translated both ways (the tables are in the
 * files named by the protocol pair).
 *
 * Bedrock needs more than a translator: the model is in the URL (`requestUrl`), every request
 * is signed with SigV4 or carries a Bedrock API key (`authorize`, per attempt, over the exact
 * body sent), and streams are binary event-stream frames (`createStreamParser`). A backend sets
 * `region` (and `model`, the Bedrock model id); `url` replaces the region's public address (a
 * VPC endpoint); `api_key` a Bedrock API key instead of AWS credentials from the standard chain.
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
import { type BackendSettings, wantsStreamUsage, withCredentials } from "../../core/llm/provider.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { prepareBedrockRequest } from "./backend-request.ts";
import { isContextWindowError } from "./context-window.ts";
import { EventStreamDecoder } from "./event-stream.ts";
import { bedrockModelUrl, bedrockRuntimeUrl, isBedrockRegion } from "./urls.ts";
import { chatToConverseRequest } from "./chat-to-converse.ts";
import { converseToChatError, type ErrorHeaders } from "./converse-errors.ts";
import { ConverseStreamTranslator } from "./converse-stream-to-chat.ts";
import { converseToChatResponse } from "./converse-to-chat.ts";

export { EventStreamDecoder, isContextWindowError };
export { type BedrockAttempt, type BedrockBackendSettings, prepareBedrockRequest } from "./backend-request.ts";
export { type SignableRequest, signBedrockRequest } from "./sigv4.ts";
export { bedrockModelUrl, bedrockRuntimeUrl };
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

function backendProblems(backend: BackendSettings): string[] {
  const problems: string[] = [];
  // The signature's scope needs the region even with an explicit url; a key does not.
  if (backend.region === "" && !(backend.url !== "" && backend.api_key !== "")) problems.push('region: required: the AWS region of Bedrock (e.g. "us-east-1")');
  else if (backend.region !== "" && !isBedrockRegion(backend.region)) problems.push(`region: "${backend.region}" is not an AWS region name (e.g. "us-east-1")`);
  if (backend.model === "") problems.push("model: required: the Bedrock model id or inference profile (e.g. anthropic.claude-3-5-haiku-20241022-v1:0)");
  return problems;
}

export const bedrockProvider = {
  name: "bedrock",
  // Per region (`bedrockRuntimeUrl`): there is no one default address.
  defaultUrl: "",
  requestUrl: (call) => bedrockModelUrl({ modelId: call.model, stream: call.stream, region: call.backend.region, baseUrl: call.backend.url }),
  async authorize(request, call) {
    const { backend } = call;
    const prepared = await prepareBedrockRequest({
      settings: { region: backend.region, url: backend.url, apiKey: backend.api_key !== "" ? backend.api_key : undefined },
      modelId: call.model,
      stream: call.stream,
      body: request.body,
      // Signed with the rest: no credential of the client's goes along.
      headers: withCredentials(request.headers, {}),
    });
    return prepared.headers;
  },
  createStreamParser: () => new EventStreamDecoder(),
  isContextWindowError,
  backendProblems,
  backendAddress: (backend) => (isBedrockRegion(backend.region) ? bedrockRuntimeUrl(backend.region) : ""),
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

export default definePlugin({
  name: "provider-bedrock",
  dependsOn: ["providers"],
  setup(api) {
    api.use("providers").register(bedrockProvider);
  },
});
