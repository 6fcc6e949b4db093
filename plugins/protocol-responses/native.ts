/**
 * Answers of a backend that speaks the Responses API itself (`speaks: ["responses"]`): passed
 * on as they are, read for their usage (`usage` of the Response, and of the Response carried by
 * `response.completed` / `response.incomplete` in a stream), followed for the stream's end (one
 * of the terminal events: `response.completed`, `response.incomplete`, `response.failed`), and
 * shown to `onDone` when complete, so the gateway can keep its own copy.
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import type { OutEvent } from "../../core/llm/events.ts";
import type { Translator } from "../../core/llm/provider.ts";
import { type TokenUsage, usageFromCounts } from "../../core/llm/usage.ts";

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);
const DONE = new Set(["response.completed", "response.incomplete"]);

/** A Response's `usage` as the gateway counts it (`input_tokens` includes the cached ones, as OpenAI counts them). */
export function responsesAnswerUsage(body: unknown): TokenUsage | undefined {
  if (!isRecord(body) || !isRecord(body.usage)) return undefined;
  const { input_tokens, output_tokens, input_tokens_details } = body.usage;
  const usage = usageFromCounts(input_tokens, output_tokens);
  if (!usage) return undefined;
  const cached = isRecord(input_tokens_details) ? input_tokens_details.cached_tokens : undefined;
  return typeof cached === "number" && cached > 0 ? { ...usage, cached_tokens: cached } : usage;
}

/**
 * The watch of one attempt; `onDone` gets the complete Response (a whole answer, or the one a
 * stream ended with). A stream that breaks off ends, after what arrived, with `error` and
 * `response.failed` continuing its sequence (`failure`), as a translated stream does.
 */
export class NativeResponsesWatch {
  private ended = false;
  private usage: TokenUsage | undefined;
  private sequence = -1;
  private response: JsonObject | undefined;

  constructor(private readonly onDone: (response: JsonObject) => void = () => {}) {}

  translator(): Translator {
    return {
      translateResponse: (body) => {
        if (!isRecord(body)) throw new Error("the backend answer is not a JSON object");
        if (body.object === "response") this.onDone(body);
        return { body, usage: responsesAnswerUsage(body) };
      },
      translateStreamEvent: (event) => {
        this.see(event.json);
        return [{ event: event.event, data: event.json ?? event.data }];
      },
      streamProgress: () => ({ ended: this.ended, usage: this.usage }),
    };
  }

  /** The events that end a stream that broke off. */
  failure(message: string): OutEvent[] {
    const next = () => ++this.sequence;
    const error = { type: "error", code: "server_error", message, param: null, sequence_number: next() };
    const response = { ...(this.response ?? { object: "response", output: [] }), status: "failed", error: { code: "server_error", message } };
    return [{ event: "error", data: error }, { event: "response.failed", data: { type: "response.failed", response, sequence_number: next() } }];
  }

  private see(json: unknown): void {
    if (!isRecord(json)) return;
    if (typeof json.sequence_number === "number") this.sequence = json.sequence_number;
    if (isRecord(json.response)) this.response = json.response;
    if (typeof json.type !== "string" || !TERMINAL.has(json.type)) return;
    this.ended = true;
    this.usage = responsesAnswerUsage(json.response) ?? this.usage;
    if (DONE.has(json.type) && isRecord(json.response)) this.onDone(json.response);
  }
}
