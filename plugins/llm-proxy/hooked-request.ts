/**
 * A request with hooks (hooks.ts) on its way: its route (the output hooks behind the provider's
 * translator; a request its backend would take as it is translated to chat completions
 * instead, so the hooks can read it) and its input through the input hooks, before the cache
 * lookup. A request without hooks goes on untouched.
 */
import { errors, GatewayError } from "../../core/errors.ts";
import { ownKeyCount, repeatedKey } from "../../core/request-body/json-keys.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { ProviderDefinition } from "../../core/llm/provider.ts";
import { changedBodyPieces } from "../../core/llm/json-text.ts";
import { utf8Pieces } from "../../core/llm/utf8-blocks.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { LlmRequest } from "./deps.ts";
import type { RequestHooks } from "./hooks.ts";
import { type JsonBody, type ProtocolRoute, providerBody } from "./protocol-route.ts";

/** Whether the protocol has a chat-completions reading of this request (a count of tokens has none). */
function hasChatReading(route: ProtocolRoute, ctx: RequestContext, service: ServiceConfig, provider: ProviderDefinition, body: JsonBody): boolean {
  const { protocol } = route;
  if (!protocol.toChatRequest) return false;
  try {
    protocol.toChatRequest(body.value, { path: ctx.url.pathname, model: service.model, provider: provider.name });
    return true;
  } catch {
    return false;
  }
}

/**
 * The route of a request with hooks. The hooks read chat completions: a backend that speaks the
 * client's protocol gets the request translated (the provider's translator) when it has a
 * chat-completions reading; a provider that takes every protocol as it is (`speaks: "all"`) has
 * no translation, and its requests go on unread (docs/guardrails.md#what-is-inspected).
 */
export function guardedRoute(
  route: ProtocolRoute,
  provider: ProviderDefinition,
  hooks: RequestHooks | undefined,
  ctx: RequestContext,
  service: ServiceConfig,
  body: JsonBody,
): ProtocolRoute {
  if (!hooks) return route;
  let guarded = route;
  if (route.native) {
    if (provider.speaks === "all" || !hasChatReading(route, ctx, service, provider, body)) return route;
    guarded = { protocol: route.protocol, native: false };
  }
  return hooks.wantsOutput ? { ...guarded, wrapChat: hooks.wrapChat } : guarded;
}

export type GuardedInput = { changed: true; body: JsonBody } | { changed: false; body: JsonBody | undefined };

/**
 * A body the hooks read and left as it was goes on as the client's bytes: a key it holds twice
 * in one object (JSON.parse, and so the hooks, read the last of the two; a backend's parser may
 * read the first) would let a text past the hooks. Refused, as a key twice at the top level is
 * for every request (core/request-body/json-keys.ts).
 */
function refuseRepeatedKeys(body: JsonBody, count: (status: number) => void): void {
  if (body.keys === undefined || body.keys <= ownKeyCount(body.value)) return;
  const key = repeatedKey(new TextDecoder().decode(body.bytes), body.value) ?? "?";
  count(400);
  throw errors.badRequest(
    `the JSON body has the field ${
      JSON.stringify(key)
    } more than once in one object; send each field once (the gateway's checks read one of them, a backend may read the other)`,
  );
}

/**
 * The chat-completions request through the input hooks: refused (the refusal thrown, counted
 * with `count`), changed (the body the cache keys on and the provider gets) or unchanged.
 */
export async function guardedInput(request: LlmRequest, clientBody: JsonBody, count: (status: number) => void): Promise<GuardedInput> {
  const { hooks, route } = request;
  if (!hooks?.wantsInput || route.native) return { changed: false, body: undefined };
  const chat = providerBody(request, clientBody);
  let changed;
  try {
    changed = await hooks.input(chat.value);
  } catch (error) {
    if (error instanceof GatewayError) count(error.status);
    throw error;
  }
  if (!changed) {
    refuseRepeatedKeys(chat, count);
    return { changed: false, body: chat };
  }
  const { pieces, escapeFree } = changedBodyPieces(changed, chat);
  return { changed: true, body: { ...chat, value: changed, bytes: utf8Pieces(pieces), escapeFree, keys: undefined } };
}
