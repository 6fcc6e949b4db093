/**
 * A backend's answer as the client gets it (step 4 of the processing order in handler.ts):
 * translated back (to chat completions by the provider, then to the client's protocol) when
 * the attempt's translator translates, else the backend's bytes unchanged; the usage it
 * reported; and what the cache may store.
 */
import type { CachedAnswer, CacheLookup } from "../../core/llm/cache.ts";
import { type Bytes, parseJson } from "../../core/llm/json.ts";
import { ErrorAnswer, type TranslatedResponse, type Translator } from "../../core/llm/provider.ts";
import { type OpenedStream, passSource, type StreamTranslation, translateSource } from "../../core/llm/stream.ts";
import { sourcedResponse } from "../../core/proxy/own-body-response.ts";
import { type TokenUsage, usageOf } from "../../core/llm/usage.ts";
import { ERROR_CODES, type ErrorCode, errors, GatewayError } from "../../core/errors.ts";
import { type EndHook, withEndHook } from "../../core/pipeline/end-hook.ts";
import { wholeBody } from "../../core/pipeline/whole-body.ts";
import { responseHeaders } from "../../core/proxy/headers.ts";
import type { Accounting } from "./accounting.ts";
import type { Attempt } from "./attempts.ts";
import type { LlmModeDeps, LlmRequest } from "./deps.ts";
import { streamEndHooks } from "./stream-end.ts";

export interface Answer {
  response: Response;
  /** Known only for complete, non-streaming answers. */
  usage?: TokenUsage;
  /** The answer exactly as sent, for the cache (non-streaming answers only). */
  stored?: CachedAnswer;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const JSON_TYPE = "application/json";

/** Set on answers as they are built (a header added afterwards costs a `Headers` per response). */
export const MISS: Readonly<Record<string, string>> = Object.freeze({ "x-cache": "MISS" });

type AnswerDeps = Pick<LlmModeDeps, "log" | "metrics" | "firstToken" | "countStreamedTokens" | "streamIdleTimeoutMs">;

/**
 * The answer of the attempt that answered: an error (keeping the backend's Retry-After, a 429
 * every backend sent), a stream piped as it arrives (its end told to stream-end.ts), or a
 * complete answer read whole. In the client's protocol: the attempt's translator takes it
 * there, and a native answer's usage is read as its protocol says.
 */
export async function backendAnswer(
  deps: AnswerDeps,
  accounting: Accounting,
  request: LlmRequest,
  backend: Response,
  attempt: Attempt,
  lookup: CacheLookup,
): Promise<Answer> {
  const { protocol, native } = attempt.route;
  if (backend.status < 200 || backend.status > 299) {
    const retryAfter = backend.headers.get("retry-after");
    return errorAnswer(backend, attempt.received, attempt.translator, retryAfter === null ? MISS : { ...MISS, "retry-after": retryAfter });
  }
  if (request.stream) {
    // deno-lint-ignore prefer-const -- read by the stream-end hooks, which exist before the answer does
    let answer: Answer | undefined;
    const hooks = streamEndHooks(
      deps,
      accounting,
      request,
      attempt.target.url,
      lookup,
      backend.status,
      () => answer?.response.headers.get("content-type") ?? null,
    );
    const options = {
      format: attempt.provider.streamFormat ?? "sse",
      parser: attempt.provider.createStreamParser?.(),
      idleTimeoutMs: deps.streamIdleTimeoutMs,
      errorEvent: protocol.streamErrorEvent?.bind(protocol),
      ...hooks,
    } satisfies Omit<StreamTranslation, "translator">;
    answer = streamAnswer(backend, attempt.opened, attempt.translator, options, MISS, request.ctx.ownBodies);
    return answer;
  }
  const nativeAnswers = native ? protocol.native : undefined;
  const readUsage = nativeAnswers ? (body: unknown) => nativeAnswers.answerUsage(body) : undefined;
  return completeAnswer(backend, attempt.received, attempt.translator, MISS, readUsage);
}

async function readBody(backend: Response): Promise<Bytes> {
  try {
    return new Uint8Array(await backend.arrayBuffer());
  } catch (error) {
    throw errors.badGateway(`the backend broke off its answer: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `headers` as built by `responseHeaders` (a record, or `Headers` when cookies are set), with `extra` already in. */
function answer(status: number, headers: HeadersInit, contentType: string, body: Bytes, usage?: TokenUsage): Answer {
  return { response: wholeBody(new Response(body, { status, headers })), usage, stored: { status, contentType, body } };
}

/** The gateway's own JSON answer headers, plus `extra`. */
function jsonHeaders(extra: Readonly<Record<string, string>>): Record<string, string> {
  return { "content-type": JSON_TYPE, ...extra };
}

/**
 * A non-2xx answer: the provider's error translation when it has one, else the backend's body.
 * `received` is the body when it was already read (non-streaming requests); a streaming
 * request's error body is read here. `extra` headers go on the response (set here, so it is built once).
 */
export async function errorAnswer(
  backend: Response,
  received: Bytes | undefined,
  translator: Translator,
  extra: Readonly<Record<string, string>> = {},
): Promise<Answer> {
  const bytes = received ?? (await readBody(backend));
  const contentType = backend.headers.get("content-type") ?? "";
  if (!translator.translateError) return answer(backend.status, responseHeaders(backend.headers, extra), contentType, bytes);
  const text = decoder.decode(bytes);
  try {
    const body = translator.translateError(backend.status, parseJson(text) ?? text, backend.headers);
    return answer(backend.status, jsonHeaders(extra), JSON_TYPE, encoder.encode(JSON.stringify(body)));
  } catch {
    // The backend's own error says more than a failed translation of it would.
    return answer(backend.status, responseHeaders(backend.headers, extra), contentType, bytes);
  }
}

/**
 * A complete 2xx answer, read whole (its usage is needed before the response is written):
 * `received` is its body when the attempt already read it (see handler.ts `forward`).
 */
export async function completeAnswer(
  backend: Response,
  received: Bytes | undefined,
  translator: Translator,
  extra: Readonly<Record<string, string>> = {},
  readUsage: (body: unknown) => TokenUsage | undefined = usageOf,
): Promise<Answer> {
  const bytes = received ?? (await readBody(backend));
  if (!translator.translateResponse) {
    // Passed through byte for byte; usage counts only when the body has a top-level usage
    // (`readUsage`: the chat-completions one, or the Messages one for a native Messages answer).
    const usage = readUsage(parseJson(decoder.decode(bytes)));
    return answer(backend.status, responseHeaders(backend.headers, extra), backend.headers.get("content-type") ?? "", bytes, usage);
  }
  const json = parseJson(decoder.decode(bytes));
  if (json === undefined) throw errors.badGateway("the backend answered with a body that is not JSON");
  let translated: TranslatedResponse;
  try {
    translated = translator.translateResponse(json);
  } catch (error) {
    if (error instanceof ErrorAnswer) throw asGatewayError(error);
    throw errors.badGateway(`the backend answer could not be translated: ${error instanceof Error ? error.message : String(error)}`);
  }
  return answer(backend.status, jsonHeaders(extra), JSON_TYPE, encoder.encode(JSON.stringify(translated.body)), translated.usage);
}

/** A 2xx answer that is an error for the client (a blocked prompt), answered as the gateway's own errors are: in the client's protocol. */
function asGatewayError(error: ErrorAnswer): GatewayError {
  const { type, code } = error.body.error;
  const known = typeof code === "string" && Object.hasOwn(ERROR_CODES, code) ? (code as ErrorCode) : undefined;
  const errorType = known ? ERROR_CODES[known].type : typeof type === "string" ? type : "backend_error";
  return new GatewayError(error.status, errorType as GatewayError["type"], error.message, { ...MISS }, known);
}

/**
 * A 2xx streamed answer, sent on as it arrives: the backend's own stream when the provider does
 * not translate streams, else the gateway's parse -> translate -> SSE pipe. `opened` is the
 * backend body with its first bytes already read (see handler.ts `forward`).
 */
export function streamAnswer(
  backend: Response,
  opened: OpenedStream | undefined,
  translator: Translator,
  options: Omit<StreamTranslation, "translator">,
  extra: Readonly<Record<string, string>> = {},
  /** The server writes the stream's chunks itself (`RequestContext.ownBodies`). */
  ownBodies = false,
): Answer {
  if (!translator.translateStreamEvent || !opened) {
    // An event stream passed on as it is still ends with an error event if it breaks off,
    // falls silent or (when the provider follows its events) ends without its end.
    const sse = options.format === "sse" && (backend.headers.get("content-type") ?? "").includes("text/event-stream");
    if (!sse || !opened) {
      return {
        response: new Response(firstBytesSeen(bodyOf(backend, opened), options.onFirstBytes), {
          status: backend.status,
          headers: responseHeaders(backend.headers, extra),
        }),
      };
    }
    // The stream runs the request's end steps itself (core/pipeline/end-hook.ts).
    const endHook: EndHook = {};
    const body = passSource(opened, options.onError, { ...options, translator, endHook });
    return { response: withEndHook(sourcedResponse(body, { status: backend.status, headers: responseHeaders(backend.headers, extra) }, ownBodies), endHook) };
  }
  const endHook: EndHook = {};
  const body = translateSource(opened, { ...options, translator, endHook });
  return {
    response: withEndHook(
      sourcedResponse(body, {
        status: backend.status,
        headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...extra },
      }, ownBodies),
      endHook,
    ),
  };
}

/** `body` passed through, telling `onFirstBytes` when its first bytes go out (the streams of stream.ts tell it themselves). */
function firstBytesSeen(body: ReadableStream<Uint8Array> | null, onFirstBytes: (() => void) | undefined): ReadableStream<Uint8Array> | null {
  if (!body || !onFirstBytes) return body;
  let seen = false;
  const watch = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      if (!seen && chunk.byteLength > 0) {
        seen = true;
        onFirstBytes();
      }
      controller.enqueue(chunk);
    },
  });
  return body.pipeThrough(watch);
}

/** A body passed on untouched: its first bytes, already read, then the rest. */
function bodyOf(backend: Response, opened: OpenedStream | undefined): ReadableStream<Uint8Array> | null {
  if (!opened) return backend.body;
  let first: Uint8Array | undefined = opened.first;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (first) {
        controller.enqueue(first);
        first = undefined;
        return;
      }
      const chunk = await opened.reader.read();
      if (chunk.done) controller.close();
      else controller.enqueue(chunk.value);
    },
    cancel: (reason) => opened.reader.cancel(reason),
  });
}
