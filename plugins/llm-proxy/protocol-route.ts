/**
 * How a request travels for the client protocol it came in: translated to chat completions for
 * the provider and back (the protocol's `toChatRequest` and `fromChat`; nothing to do for chat
 * completions itself), or, when the provider's backend speaks the client's protocol, as it is
 * both ways (`native`). Nothing here names a protocol.
 */
import {
  CHAT_COMPLETIONS_PATH,
  type ClientProtocol,
  type OpenedRequest,
  type ProtocolRequest,
  providerSpeaks,
  speaksNatively,
  UntranslatableRequest,
} from "../../core/llm/client-protocol.ts";
import type { ProviderDefinition, Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { utf8 } from "../../core/llm/utf8-blocks.ts";
import { errors } from "../../core/errors.ts";
import type { SyncBody } from "../../core/proxy/modes.ts";
import type { LlmRequest } from "./deps.ts";

export type JsonBody = Extract<SyncBody, { kind: "json" }>;

/** A request's body as the client sent it, and as chat completions when the input hooks already read it that way (possibly masked). */
export interface RequestBodies {
  readonly client: JsonBody;
  /** Set when the input hooks ran: what every translated attempt gets instead of translating `client` itself. */
  readonly chat?: JsonBody;
}

export interface ProtocolRoute {
  readonly protocol: ClientProtocol;
  /** The backend speaks the client's protocol: the request goes as it is, the answer comes back as it is. */
  readonly native: boolean;
  /** Puts the output hooks behind the provider's translator, before the protocol's way back (hooks.ts). */
  readonly wrapChat?: (chat: Translator, asWritten: boolean) => Translator;
  /** What the opened protocol asked `backendPath` to be asked about, for a translated request (`OpenedRequest.routedPath`). */
  readonly routedPath?: string;
}

export function protocolRoute(protocol: ClientProtocol, provider: ProviderDefinition): ProtocolRoute {
  return { protocol, native: speaksNatively(provider, protocol) };
}

/**
 * The request with the protocol that serves it from here on: the registered one, or, for a
 * protocol that keeps state (`open`), the one it opened for this request.
 */
export async function openRequest(request: LlmRequest, body: JsonBody): Promise<{ request: LlmRequest; opened?: OpenedRequest }> {
  const { route, ctx, service, provider, stream } = request;
  if (!route.protocol.open) return { request };
  const opened = await route.protocol.open(body.value, {
    path: ctx.url.pathname,
    model: service.model,
    provider: provider.name,
    consumer: ctx.principal.consumer,
    native: route.native,
    stream,
    speaks: (name) => providerSpeaks(provider, name),
  });
  return { request: { ...request, route: { ...route, protocol: opened.protocol, routedPath: opened.routedPath } }, opened };
}

/** Whether the request becomes a chat-completions request on its way (and its answer goes back through `fromChat`). */
const translated = (route: ProtocolRoute) => !route.native && route.protocol.toChatRequest !== undefined;

/** The body the provider gets: the client's, or its chat-completions translation. */
export function providerBody({ route, ctx, service, provider }: LlmRequest, body: JsonBody): JsonBody {
  const { protocol } = route;
  if (route.native || !protocol.toChatRequest) return body;
  const request: ProtocolRequest = { path: ctx.url.pathname, model: service.model, provider: provider.name };
  try {
    const value = protocol.toChatRequest(body.value, request);
    const json = JSON.stringify(value);
    return { ...body, value, bytes: utf8(json), escapeFree: !json.includes("\\"), keys: undefined };
  } catch (error) {
    if (error instanceof UntranslatableRequest) throw errors.badRequest(error.message);
    throw error;
  }
}

/** The path the provider's `backendPath` is asked about: a translated request is a chat-completions one from here on. */
export function routedPath(route: ProtocolRoute, clientPath: string): string {
  return translated(route) ? route.routedPath ?? CHAT_COMPLETIONS_PATH : clientPath;
}

/** One backend attempt's translator: the protocol's watch of a native answer, else the provider's, followed by the protocol's way back. */
export function attemptTranslator(route: ProtocolRoute, provider: ProviderDefinition, context: TranslatorContext): Translator {
  const { protocol } = route;
  if (route.native && protocol.native) return protocol.native.watch();
  const provided = provider.createTranslator(context);
  const translator = route.wrapChat ? route.wrapChat(provided, !protocol.fromChat) : provided;
  return protocol.fromChat ? protocol.fromChat(translator, context) : translator;
}
