/**
 * Inbound Messages requests (`POST /v1/messages`, `/v1/messages/count_tokens`): clients that
 * speak the Messages API instead of chat completions. Two ways to a backend:
 *
 * - a provider that `speaksMessages` gets the request as it is; its answer comes back as it
 *   is, its usage and stream end read here (`nativeMessages`);
 * - any other provider gets the chat-completions request (messages-to-chat-request.ts) through
 *   its own translator, and the answer, errors and stream come back through that translator
 *   and then into Messages form (`messagesFromChat`).
 */
import type { OutEvent, StreamEvent } from "../../core/llm/events.ts";
import { messagesAnswerUsage, messagesErrorEvent, MessagesStreamWatch } from "../../core/llm/messages.ts";
import type { TranslatedResponse, Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { usageOf } from "../../core/llm/usage.ts";
import { chatToMessagesError, chatToMessagesResponse } from "./chat-to-messages-answer.ts";
import { ChatStreamToMessages } from "./chat-stream-to-messages.ts";

/** Where a translated Messages request goes for a provider: the chat-completions path it expects. */
export const CHAT_PATH = "/v1/chat/completions";

export { messagesRoute, type MessagesRoute } from "../../core/llm/messages.ts";

/** The stream's own end for a Messages client: an `error` event its SDKs raise. */
export const messagesStreamError = (message: string): OutEvent => messagesErrorEvent(message);

/** What a native answer's usage is read with (a Messages body, not a chat one). */
export const nativeUsage = messagesAnswerUsage;

/** For a provider that speaks Messages: nothing translated, the stream followed for its end and usage. */
export function nativeMessages(): Translator {
  const watch = new MessagesStreamWatch();
  return { observeStreamEvent: (event) => watch.event(event), streamProgress: () => watch.progress() };
}

/** The provider's translator (chat <-> backend) followed by chat -> Messages for the answer. */
export function messagesFromChat(inner: Translator, context: TranslatorContext): Translator {
  const messageId = () => `msg_${context.newId().replace(/-/g, "")}`;
  const stream = new ChatStreamToMessages(messageId);
  const chatEvents = (event: StreamEvent): unknown[] => {
    if (inner.translateStreamEvent) return inner.translateStreamEvent(event).map((out) => out.data);
    inner.observeStreamEvent?.(event);
    return [event.json ?? event.data];
  };
  return {
    ...(inner.translateRequest ? { translateRequest: (body) => inner.translateRequest!(body) } : {}),
    translateResponse(body): TranslatedResponse {
      const chat = inner.translateResponse ? inner.translateResponse(body) : { body, usage: usageOf(body) };
      return { body: chatToMessagesResponse(chat.body, messageId), usage: chat.usage };
    },
    translateStreamEvent: (event) => chatEvents(event).flatMap((data) => stream.event(data)),
    translateStreamEnd: () => [...(inner.translateStreamEnd?.() ?? []).flatMap((out) => stream.event(out.data)), ...stream.end()],
    ...(inner.streamProgress ? { streamProgress: () => inner.streamProgress!() } : {}),
    translateError: (status, body) => chatToMessagesError(status, inner.translateError ? inner.translateError(status, body) : body),
  };
}
