/**
 * Answers of a backend that speaks the Responses API itself (`speaks: ["responses"]`): passed
 * on as they are, read for their usage (`usage` of the Response, and of the Response carried by
 * `response.completed` / `response.incomplete` in a stream), followed for the stream's end (one
 * of the terminal events: `response.completed`, `response.incomplete`, `response.failed`), and
 * shown to `onDone` when complete, so the gateway can keep its own copy.
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
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

/** The watch of one attempt; `onDone` gets the complete Response (a whole answer, or the one a stream ended with). */
export function nativeResponses(onDone: (response: JsonObject) => void = () => {}): Translator {
  let ended = false;
  let usage: TokenUsage | undefined;
  return {
    translateResponse(body) {
      if (!isRecord(body)) throw new Error("the backend answer is not a JSON object");
      if (body.object === "response") onDone(body);
      return { body, usage: responsesAnswerUsage(body) };
    },
    translateStreamEvent(event) {
      const json = event.json;
      if (isRecord(json) && typeof json.type === "string" && TERMINAL.has(json.type)) {
        ended = true;
        usage = responsesAnswerUsage(json.response) ?? usage;
        if (DONE.has(json.type) && isRecord(json.response)) onDone(json.response);
      }
      return [{ event: event.event, data: json ?? event.data }];
    },
    streamProgress: () => ({ ended, usage }),
  };
}
