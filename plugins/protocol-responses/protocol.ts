/**
 * The `responses` client protocol: `POST /v1/responses` and `/v1/responses/input_tokens`. Each
 * request is opened (`open`) before anything is sent: its `previous_response_id` is looked up
 * among the caller's stored responses (404 when it is not one), and the protocol it gets for
 * itself carries the id its answer will have and the conversation so far. Then:
 *
 * - a provider that speaks the Responses API (`responses_api`) gets the request as it is: the
 *   backend keeps the conversation; the gateway keeps a copy of each complete answer, so the
 *   retrieve, delete and input-items routes and ownership work the same (native.ts);
 * - any other provider gets a chat-completions request with the whole conversation
 *   (request-to-chat.ts), and the answer comes back as a Response (response.ts,
 *   chat-stream-to-responses.ts), stored when `store` is not false.
 *
 * A token count (`/v1/responses/input_tokens`) goes as it is to a native backend, to the
 * counting endpoint of a provider that speaks the Messages API (`messagesCount`), and is a 501
 * for any other.
 */
import { chatAnswer, chatErrorBody, chatStreamData, type ClientProtocol, type ProtocolCall } from "../../core/llm/client-protocol.ts";
import { errors } from "../../core/errors.ts";
import type { OutEvent } from "../../core/llm/events.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { COUNT_TOKENS_PATH } from "../../core/llm/messages.ts";
import type { Logger } from "../../core/log.ts";
import type { Translator } from "../../core/llm/provider.ts";
import { ChatStreamToResponses } from "./chat-stream-to-responses.ts";
import { inputItems, newItemId } from "./items.ts";
import { NativeResponsesWatch, responsesAnswerUsage } from "./native.ts";
import { responsesToChatRequest } from "./request-to-chat.ts";
import { chatToResponse, echoedSettings, type ResponseMeta, responsesError } from "./response.ts";
import { responsesShapeProblem } from "./shape.ts";
import { conversationAfter, type ResponseStore, type StoredResponse } from "./store.ts";

export const RESPONSES_PATH = "/v1/responses";
export const INPUT_TOKENS_PATH = "/v1/responses/input_tokens";

export interface ResponsesDeps {
  store: ResponseStore;
  newId(): string;
  /** ms since the epoch. */
  now(): number;
  log: Logger;
}

/** The `error` event of a stream that broke off before the protocol knew the request (not opened). */
function plainStreamError(message: string): OutEvent {
  return { event: "error", data: { type: "error", code: "server_error", message, param: null, sequence_number: 0 } };
}

/** The stored response `id`, the caller's, or a 404 (another consumer's is as missing as an unknown one). */
async function previousOf(deps: ResponsesDeps, id: unknown, consumer: string | undefined): Promise<StoredResponse | undefined> {
  if (typeof id !== "string" || id === "") return undefined;
  const record = await deps.store.get(id, consumer);
  if (!record) throw errors.notFound(`Previous response with id '${id}' not found.`);
  return record;
}

function countOnly(call: ProtocolCall): never {
  throw errors.notImplemented(
    `model "${call.model}" cannot count input tokens: its provider "${call.provider}" speaks neither the Responses API nor the Messages API, and has no way to count`,
  );
}

/** The fields a Messages-style `count_tokens` endpoint takes of a Messages request. */
const COUNT_FIELDS = ["model", "messages", "system", "tools", "tool_choice", "thinking"];

/**
 * A token count on a Messages-style backend: the Responses request translated as any request
 * (to chat completions, then by the provider to its Messages body), cut to what its counting
 * endpoint takes, sent there (`routedPath`), and its `{input_tokens}` answered as a Responses count.
 */
function messagesCount(body: JsonObject, conversation: JsonObject[], stored: number, base: ClientProtocol) {
  const protocol: ClientProtocol = {
    ...base,
    toChatRequest: () => responsesToChatRequest({ ...body, stream: false }, conversation, stored),
    fromChat: (inner) => ({
      translateRequest(chat) {
        const messages = inner.translateRequest ? inner.translateRequest(chat) : chat;
        return Object.fromEntries(Object.entries(messages).filter(([key]) => COUNT_FIELDS.includes(key)));
      },
      translateResponse(answer) {
        if (!isRecord(answer) || typeof answer.input_tokens !== "number") throw new Error("the backend's count has no input_tokens");
        return { body: { object: "response.input_tokens", input_tokens: answer.input_tokens }, usage: undefined };
      },
      translateError: (status, error) => responsesError(status, chatErrorBody(inner, status, error)),
    }),
  };
  return { protocol, routedPath: COUNT_TOKENS_PATH };
}

/** The protocol for one request (see the file comment). */
async function open(deps: ResponsesDeps, base: ClientProtocol, body: JsonObject, call: ProtocolCall) {
  const previous = await previousOf(deps, body.previous_response_id, call.consumer);
  const input = inputItems(body.input, deps.newId);
  const context = previous && !call.native ? conversationAfter(previous) : [];
  if (call.path === INPUT_TOKENS_PATH) {
    if (call.native) return { protocol: base };
    if (call.speaks("messages")) return messagesCount(body, [...context, ...input], context.length, base);
    return { protocol: { ...base, toChatRequest: () => countOnly(call) } };
  }
  const owner = call.consumer ?? "";
  const store = body.store !== false;
  const pending: Promise<void>[] = [];
  const keep = (response: JsonObject, context: JsonObject[]) => {
    if (!store || typeof response.id !== "string") return;
    pending.push(deps.store.put({ owner, response, input, context }).catch((error) => deps.log.error("responses_store_failed", { id: response.id, error })));
  };
  const settled = async () => {
    await Promise.all(pending);
  };
  if (call.native) {
    // The backend holds the conversation: the gateway's copy has this request's input alone.
    // The watch of the attempt whose stream is being sent: a stream that breaks off ends in its sequence.
    let watching: NativeResponsesWatch | undefined;
    const watch = () => {
      const attempt = new NativeResponsesWatch((response) => keep(response, []));
      const translator = attempt.translator();
      const translate = translator.translateStreamEvent!;
      translator.translateStreamEvent = (event) => {
        watching = attempt;
        return translate(event);
      };
      return translator;
    };
    const protocol: ClientProtocol = {
      ...base,
      native: { watch, answerUsage: responsesAnswerUsage },
      streamErrorEvent: (message) => (watching ?? new NativeResponsesWatch()).failure(message),
    };
    return { protocol, settled };
  }
  const meta: ResponseMeta = {
    id: newItemId("resp", deps.newId),
    createdAt: Math.floor(deps.now() / 1000),
    model: String(body.model ?? call.model),
    previousResponseId: previous ? String(body.previous_response_id) : null,
    store,
    settings: echoedSettings(body),
  };
  // The stream of the attempt that answered: a stream that breaks off ends in its sequence.
  let streaming: ChatStreamToResponses | undefined;
  const fromChat = (inner: Translator): Translator => {
    const stream = new ChatStreamToResponses(meta, deps.newId, (response) => keep(response, context));
    const events = (data: unknown) => {
      streaming = stream;
      return stream.event(data);
    };
    return {
      ...(inner.translateRequest ? { translateRequest: (chat) => inner.translateRequest!(chat) } : {}),
      translateResponse(answer) {
        const chat = chatAnswer(inner, answer);
        const response = chatToResponse(chat.body, meta, deps.newId);
        keep(response, context);
        return { body: response, usage: chat.usage };
      },
      translateStreamEvent: (event) => chatStreamData(inner, event).flatMap(events),
      translateStreamEnd: () => [...(inner.translateStreamEnd?.() ?? []).flatMap((out) => events(out.data)), ...stream.end()],
      ...(inner.streamProgress ? { streamProgress: () => inner.streamProgress!() } : {}),
      translateError: (status, error) => responsesError(status, chatErrorBody(inner, status, error)),
    };
  };
  const protocol: ClientProtocol = {
    ...base,
    toChatRequest: (request) => responsesToChatRequest(request, [...context, ...input], context.length),
    fromChat,
    streamErrorEvent: (message) => (streaming ?? new ChatStreamToResponses(meta, deps.newId, () => {})).fail(message),
  };
  return { protocol, settled };
}

export function responsesProtocol(deps: ResponsesDeps): ClientProtocol {
  const base: ClientProtocol = {
    name: "responses",
    paths: [RESPONSES_PATH, INPUT_TOKENS_PATH],
    shapeProblem: responsesShapeProblem,
    // Every request is opened first (`open`): these serve only one that was not.
    toChatRequest: (body) => responsesToChatRequest(body, inputItems(body.input, deps.newId)),
    native: { watch: () => new NativeResponsesWatch().translator(), answerUsage: responsesAnswerUsage },
    streamErrorEvent: plainStreamError,
    open: (body, call) => open(deps, base, body, call),
  };
  return base;
}
