/**
 * The `messages` client protocol: clients that speak the Messages API (`POST /v1/messages`,
 * `/v1/messages/count_tokens`) instead of chat completions. A provider that speaks Messages
 * (`speaks: ["messages"]`: `messages_api`, `passthrough`) gets their requests as they are; any
 * other gets them as chat completions, and the answers, streams and errors come back in
 * Messages form (the tables are in the files named by the protocol pair). On when the LLM
 * proxy is, that is when some service sets `provider`.
 */
import type { ClientProtocol, ProtocolRequest } from "../../core/llm/client-protocol.ts";
import { errors } from "../../core/errors.ts";
import type { JsonObject } from "../../core/llm/json.ts";
import { COUNT_TOKENS_PATH, MESSAGES_PATH, messagesAnswerUsage } from "../../core/llm/messages.ts";
import { listsAnyPath, protocolErrors } from "../../core/llm/protocol-errors.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { messagesErrorBody, messagesStreamError } from "./errors.ts";
import { messagesShapeProblem } from "./messages-shape.ts";
import { messagesToChatRequest } from "./messages-to-chat-request.ts";
import { messagesFromChat, nativeMessages } from "./translators.ts";

/** Only `POST /v1/messages` has a chat-completions equivalent: a backend that does not speak Messages cannot count tokens. */
function toChatRequest(body: JsonObject, request: ProtocolRequest): JsonObject {
  if (request.path === COUNT_TOKENS_PATH) {
    throw errors.notFound(
      `model "${request.model}" cannot count tokens: its provider "${request.provider}" does not speak the Messages API (only POST /v1/messages is translated)`,
    );
  }
  return messagesToChatRequest(body);
}

export const messagesProtocol = {
  name: "messages",
  paths: [MESSAGES_PATH, COUNT_TOKENS_PATH],
  shapeProblem: messagesShapeProblem,
  toChatRequest,
  fromChat: messagesFromChat,
  native: { watch: nativeMessages, answerUsage: messagesAnswerUsage },
  errorBody: messagesErrorBody,
  streamErrorEvent: messagesStreamError,
} satisfies ClientProtocol;

export default definePlugin({
  name: "protocol-messages",
  dependsOn: ["providers"],
  enabled: (config) => config.services.some((service) => service.provider !== ""),
  setup(api) {
    api.use("clientProtocols").register(messagesProtocol);
    // Only where a service takes Messages requests: every other request skips the check.
    if (listsAnyPath(api.config.services, messagesProtocol.paths)) api.middleware(protocolErrors(messagesProtocol));
  },
});
