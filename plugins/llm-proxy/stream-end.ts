/**
 * The end of a streamed answer, told once by the stream (core/llm/stream.ts `onEnd`) before the
 * client's stream closes, so the request's usage record carries its tokens: an incomplete
 * stream counted and logged, its tokens counted (with `llm.count_streamed_tokens`), and a
 * stream recorded for the response cache (`llm.cache_streams`, stream-record.ts) stored when it
 * ended complete. Also its first bytes (time to first token) and its failures (the log).
 */
import { CACHED_STREAM_MAX_BYTES, type CacheLookup } from "../../core/llm/cache.ts";
import type { StreamOutcome, StreamTranslation } from "../../core/llm/stream.ts";
import type { Accounting } from "./accounting.ts";
import type { LlmModeDeps, LlmRequest } from "./deps.ts";
import { StreamRecording } from "./stream-record.ts";

type StreamEndDeps = Pick<LlmModeDeps, "log" | "metrics" | "firstToken" | "countStreamedTokens">;

/** What a stream tells as it goes and as it ends, and what it waits for (the output hooks' checks). */
export type StreamHooks = Pick<StreamTranslation, "onError" | "onEnd" | "onFirstBytes" | "onBytes" | "settle">;

/**
 * The hooks of a streamed answer from the backend at `backendUrl`. `contentType` is read when
 * the stream ended (the answer it is sent as is built after the hooks).
 */
export function streamEndHooks(
  deps: StreamEndDeps,
  accounting: Accounting,
  request: LlmRequest,
  backendUrl: string,
  lookup: CacheLookup,
  status: number,
  contentType: () => string | null,
): StreamHooks {
  const { ctx, labels } = request;
  // Whether the stream ended as its protocol says, with no error event: only then may it be cached.
  let failed = false;
  // A miss with llm.cache_streams: the stream records what it sends.
  const recording = lookup.kind === "miss" ? new StreamRecording(CACHED_STREAM_MAX_BYTES) : undefined;
  return {
    onError: (reason, error) => {
      failed = true;
      deps.log.warn("llm_stream_failed", { model: request.service.model, backend: backendUrl, reason, error });
    },
    onEnd: (outcome) => {
      streamEnded(deps, accounting, request, backendUrl, outcome);
      const body = recording && !outcome.incomplete && !outcome.cancelled && !outcome.refused && !failed ? recording.bytes() : undefined;
      if (lookup.kind === "miss" && body) void lookup.fill({ status, contentType: contentType() ?? "text/event-stream", body });
    },
    // Time to first token: observed when the first event goes to the client.
    onFirstBytes: () => deps.firstToken.record(labels, accounting.seconds(ctx)),
    onBytes: recording?.add,
    ...(request.hooks?.wantsOutput ? { settle: request.hooks.settle } : {}),
  };
}

/** Incomplete streams counted and logged, and (when on) the tokens the stream reported. */
function streamEnded(deps: StreamEndDeps, accounting: Accounting, { ctx, labels }: LlmRequest, backendUrl: string, outcome: StreamOutcome): void {
  if (outcome.incomplete) {
    deps.metrics.incomplete(labels, outcome.incomplete);
    deps.log.warn("llm_stream_incomplete", { model: labels.model, backend: backendUrl, reason: outcome.incomplete });
  }
  if (!deps.countStreamedTokens) return;
  if (outcome.usage) accounting.countTokens(ctx, labels, outcome.usage);
  else deps.metrics.usageMissing(labels);
}
