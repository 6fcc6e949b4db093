/**
 * The `llmHooks` service (core/llm/hooks.ts): plugins that look at what a model reads and
 * writes register here, and each LLM request opens the hooks that have work for it. Every
 * hook sees chat completions: the request after the client protocol's `toChatRequest`, the
 * answer and the stream events after the provider's translator and before the client
 * protocol's `fromChat` (the translator of each attempt is wrapped, `wrapChat`). Nothing here
 * names a hook.
 */
import { chatAnswer, chatStreamData } from "../../core/llm/client-protocol.ts";
import type { ChatStreamFilter, LlmHook, LlmHookRequest, LlmHooks, LlmRequestHook } from "../../core/llm/hooks.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import type { OutEvent, StreamEvent } from "../../core/llm/events.ts";
import type { Translator, TranslatorContext } from "../../core/llm/provider.ts";
import { GatewayError } from "../../core/errors.ts";
import { wholeBody } from "../../core/pipeline/whole-body.ts";
import type { SpanAttributes } from "../../core/telemetry/tracing.ts";
import type { Answer } from "./answer.ts";
import type { ProtocolRoute } from "./protocol-route.ts";

const encoder = new TextEncoder();

export class LlmHookRegistry implements LlmHooks {
  private readonly hooks: LlmHook[] = [];

  register(hook: LlmHook): void {
    this.hooks.push(hook);
  }

  /** Whether some hook may change or refuse the input of a request for `model` (`LlmHook.readsInputOf`). */
  mayReadInput(model: string): boolean {
    return this.hooks.some((hook) => hook.readsInputOf?.(model) ?? true);
  }

  /** The hooks with work for this request; undefined when none has. */
  open(request: LlmHookRequest): RequestHooks | undefined {
    if (this.hooks.length === 0) return undefined;
    const opened: LlmRequestHook[] = [];
    for (const hook of this.hooks) {
      const one = hook.open(request);
      if (one) opened.push(one);
    }
    return opened.length > 0 ? new RequestHooks(opened, request.stream) : undefined;
  }
}

/** One request's opened hooks, chained in registration order. */
export class RequestHooks {
  readonly wantsInput: boolean;
  /** Some hook looks at the answer this request gets (a whole answer, or a stream). */
  readonly wantsOutput: boolean;
  /** The chat-completions answer of the attempt that answered (whole answers), for `answer`. */
  private captured: JsonObject | undefined;
  private filter: ChatStreamFilter | undefined;

  constructor(
    private readonly hooks: readonly LlmRequestHook[],
    private readonly stream: boolean,
  ) {
    this.wantsInput = hooks.some((hook) => hook.input);
    this.wantsOutput = hooks.some((hook) => (stream ? hook.stream : hook.answer));
  }

  /** The chat-completions request through every input hook: the new body, or undefined when none changed it. */
  async input(body: JsonObject): Promise<JsonObject | undefined> {
    let current = body;
    let changed = false;
    for (const hook of this.hooks) {
      const next = await hook.input?.(current);
      if (next) {
        current = next;
        changed = true;
      }
    }
    return changed ? current : undefined;
  }

  /** The span attributes every hook adds. */
  spanAttributes(): SpanAttributes {
    const attributes: SpanAttributes = {};
    for (const hook of this.hooks) Object.assign(attributes, hook.spanAttributes?.());
    return attributes;
  }

  /**
   * An attempt's chat translator (the provider's) with the output hooks behind it: what the
   * client protocol's `fromChat` then sees. `asWritten`: the client gets the chat events as they
   * come out (no `fromChat`), so a filter may read and replace an event's raw text.
   */
  readonly wrapChat = (inner: Translator, asWritten: boolean): Translator => {
    const wrapped: Translator = {
      ...(inner.translateRequest ? { translateRequest: (body) => inner.translateRequest!(body) } : {}),
      ...(inner.streamProgress ? { streamProgress: () => inner.streamProgress!() } : {}),
      ...(inner.translateError ? { translateError: (status, body) => inner.translateError!(status, body) } : {}),
    };
    if (this.stream) {
      const readsText = asWritten && !inner.translateStreamEvent;
      wrapped.translateStreamEvent = (event) => (readsText && this.filteredText(inner, event)) || this.filtered(chatStreamData(inner, event));
      wrapped.translateStreamEnd = () => {
        const owed = (inner.translateStreamEnd?.() ?? []).map((out) => out.data);
        return [...this.filtered(owed), ...this.streamFilter().end().map(asEvent)];
      };
    } else {
      wrapped.translateResponse = (body) => {
        const chat = chatAnswer(inner, body);
        if (isRecord(chat.body)) this.captured = chat.body;
        return { body: chat.body as JsonObject, usage: chat.usage };
      };
    }
    return wrapped;
  };

  /** What the stream filters wait for before the next read (core/llm/stream.ts `settle`). */
  readonly settle = (ending: boolean): Promise<void> | undefined => this.filter?.settle?.(ending);

  /**
   * A whole 2xx answer through the answer hooks: unchanged, replaced (the chat body changed,
   * translated again into the client's protocol) or refused (the refusal's error answer, the
   * backend's usage kept so its tokens are still counted).
   */
  async guardAnswer(answer: Answer, route: ProtocolRoute, context: TranslatorContext): Promise<{ answer: Answer; refused: boolean }> {
    const body = this.captured;
    if (!body || answer.response.status < 200 || answer.response.status > 299) return { answer, refused: false };
    let current = body;
    let changed = false;
    try {
      for (const hook of this.hooks) {
        const next = await hook.answer?.(current);
        if (next) {
          current = next;
          changed = true;
        }
      }
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      const response = error.toResponse();
      response.headers.set("x-cache", "MISS");
      return { answer: { response, usage: answer.usage }, refused: true };
    }
    if (!changed) return { answer, refused: false };
    return { answer: replacedAnswer(answer, inClientProtocol(route, current, answer, context)), refused: false };
  }

  private streamFilter(): ChatStreamFilter {
    this.filter ??= chained(this.hooks.flatMap((hook) => (hook.stream ? [hook.stream()] : [])));
    return this.filter;
  }

  /** A backend's chat event through the filter's `eventText`, as its raw text; undefined when the filter needs it parsed. */
  private filteredText(inner: Translator, event: StreamEvent): OutEvent[] | undefined {
    const filter = this.streamFilter();
    if (!filter.eventText || event.event !== undefined) return undefined;
    const text = filter.eventText(event.data);
    if (text === undefined) return undefined;
    inner.observeStreamEvent?.(event);
    return [{ data: text }];
  }

  private filtered(data: unknown[]): OutEvent[] {
    const filter = this.streamFilter();
    const out: OutEvent[] = [];
    for (const item of data) for (const kept of filter.event(item)) out.push(asEvent(kept));
    return out;
  }
}

const asEvent = (data: unknown): OutEvent => ({ data });

/** Stream filters one after the other: what one sends, the next gets. */
function chained(filters: readonly ChatStreamFilter[]): ChatStreamFilter {
  if (filters.length === 1) return filters[0];
  const through = (data: unknown[], from: number) => {
    let items = data;
    for (let i = from; i < filters.length; i++) items = items.flatMap((item) => filters[i].event(item));
    return items;
  };
  return {
    event: (data) => through([data], 0),
    // What a filter still held goes through the filters after it (which then give what they held).
    end: () => filters.flatMap((filter, i) => through(filter.end(), i + 1)),
    settle(ending) {
      const pending = filters.map((filter) => filter.settle?.(ending)).filter((p): p is Promise<void> => p !== undefined);
      return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
    },
  };
}

/** A chat-completions answer in the client's protocol, as its `fromChat` writes one. */
function inClientProtocol(route: ProtocolRoute, chat: JsonObject, answer: Answer, context: TranslatorContext): unknown {
  const { protocol } = route;
  if (!protocol.fromChat) return chat;
  const translator = protocol.fromChat({ translateResponse: () => ({ body: chat, usage: answer.usage }) }, context);
  return translator.translateResponse ? translator.translateResponse(chat).body : chat;
}

/** `answer` with another JSON body (its status and headers kept). */
function replacedAnswer(answer: Answer, body: unknown): Answer {
  const bytes = encoder.encode(JSON.stringify(body));
  const headers = new Headers(answer.response.headers);
  headers.delete("content-length");
  headers.set("content-type", "application/json");
  const { status } = answer.response;
  return {
    response: wholeBody(new Response(bytes, { status, headers })),
    usage: answer.usage,
    stored: { status, contentType: "application/json", body: bytes },
  };
}
