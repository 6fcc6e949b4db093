/**
 * The translators of one backend attempt for a Messages client, one per way to the backend:
 *
 * - a provider that speaks Messages gets the request as it is; its answer comes back as it is,
 *   followed here for its stream end and usage (`nativeMessages`);
 * - any other provider gets the chat-completions request (messages-to-chat-request.ts) through
 *   its own translator, and the answer, errors and stream come back through that translator
 *   and then into Messages form (`messagesFromChat`).
 */
import type { StreamEvent } from "../../core/llm/events.ts";
import { MessagesStreamWatch } from "../../core/llm/messages.ts";
import type { TranslatedResponse, Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { usageOf } from "../../core/llm/usage.ts";
import { chatToMessagesError, chatToMessagesResponse } from "./chat-to-messages-answer.ts";
import { ChatStreamToMessages } from "./chat-stream-to-messages.ts";

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
