/**
 * The translators of one backend attempt for a Messages client, one per way to the backend:
 *
 * - a provider that speaks Messages gets the request as it is; its answer comes back as it is,
 *   followed here for its stream end and usage (`nativeMessages`);
 * - any other provider gets the chat-completions request (messages-to-chat-request.ts) through
 *   its own translator, and the answer, errors and stream come back through that translator
 *   and then into Messages form (`messagesFromChat`).
 */
import { chatAnswer, chatErrorBody, chatStreamData } from "../../core/llm/client-protocol.ts";
import { MessagesStreamWatch } from "../../core/llm/messages.ts";
import type { TranslatedResponse, Translator, TranslatorContext } from "../../core/llm/provider.ts";
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
  return {
    ...(inner.translateRequest ? { translateRequest: (body) => inner.translateRequest!(body) } : {}),
    translateResponse(body): TranslatedResponse {
      const chat = chatAnswer(inner, body);
      return { body: chatToMessagesResponse(chat.body, messageId), usage: chat.usage };
    },
    translateStreamEvent: (event) => chatStreamData(inner, event).flatMap((data) => stream.event(data)),
    translateStreamEnd: () => [...(inner.translateStreamEnd?.() ?? []).flatMap((out) => stream.event(out.data)), ...stream.end()],
    ...(inner.streamProgress ? { streamProgress: () => inner.streamProgress!() } : {}),
    translateError: (status, body) => chatToMessagesError(status, chatErrorBody(inner, status, body)),
  };
}
