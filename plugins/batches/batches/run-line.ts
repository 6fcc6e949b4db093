/**
 * Runs one claimed line: its request goes through the gateway's own routes and pipeline as a
 * request of the batch's owner (`api.dispatchAs`), so it takes the same LLM path as a direct
 * request (provider translation, weighted backends with failover, cache, usage, cost, token and
 * dollar budgets). Its answer decides what happens to the line:
 *
 * - 2xx: succeeded;
 * - the sync concurrency cap is full (503 from the limits stage): the line yields its turn and
 *   runs again shortly, no attempt spent, so a batch only takes slots interactive requests leave;
 * - a budget refusal (429 from the limits stage): failed with the refusal, never retried;
 * - 429, 5xx (a backend's, or the gateway's 502/504 when none answered): retried with backoff
 *   (the answer's Retry-After when it sends one) up to `batches.max_attempts`, then failed;
 * - any other status: failed with the answer.
 */
import { retryDelayMs } from "../../../core/backoff.ts";
import { parseRetryAfter } from "../../../core/proxy/retry-after.ts";
import type { Principal, RequestContext } from "../../../core/pipeline/context.ts";
import type { LineSource } from "./line-source.ts";
import { answeredLine, type LineOutput, parseAnswer, unansweredLine } from "./results.ts";
import type { BatchRecord } from "./record.ts";
import type { Entry } from "./store.ts";

/** First retry after this long, doubled each further one. */
export const RETRY_BASE_MS = 1_000;
/** The longest wait before a retry (a Retry-After included). */
export const RETRY_MAX_MS = 10 * 60_000;
/** A line that yielded its turn runs again after this long. */
export const YIELD_MS = 1_000;

export interface LineRunDeps {
  source: LineSource;
  maxAttempts: number;
  now(): number;
  newRequestId(): string;
  /** Runs the request as `principal` (api.dispatchAs), with the context the pipeline gave it. */
  dispatch(principal: Principal, request: Request): Promise<{ response: Response; ctx?: RequestContext }>;
}

export type LineOutcome =
  | { kind: "done"; succeeded: boolean; output: LineOutput }
  | { kind: "again"; due: number; attempts: number; reason: "retry" | "yield" }
  /** The batch is gone (deleted meanwhile): nothing to record. */
  | { kind: "gone" };

/** The path each line of a batch is sent to. */
export const pathOf = (batch: BatchRecord): string => (batch.api === "anthropic" ? "/v1/messages" : batch.endpoint);

export async function runLine(deps: LineRunDeps, entry: Entry, signal: AbortSignal): Promise<LineOutcome> {
  const batch = await deps.source.batch(entry.batchId);
  if (!batch) return { kind: "gone" };
  const requestId = `batch_req_${deps.newRequestId().replace(/-/g, "")}`;
  const line = await deps.source.line(batch, entry.line);
  if (!line) return failed(batch, requestId, "", `line ${entry.line + 1} of the batch is missing from the object store`);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (batch.api === "anthropic") headers["anthropic-version"] = "2023-06-01";
  const request = new Request(`http://gateway.batch${pathOf(batch)}`, { method: "POST", headers, body: JSON.stringify(line.body), signal });
  let answer: { response: Response; ctx?: RequestContext };
  try {
    answer = await deps.dispatch(batch.principal, request);
  } catch (error) {
    return again(deps, entry, undefined) ?? failed(batch, requestId, line.custom_id, `the request could not be sent: ${(error as Error).message}`);
  }
  const { response, ctx } = answer;
  const text = await response.text().catch(() => "");
  const status = response.status;
  const answered = () => ({
    kind: "done" as const,
    succeeded: status >= 200 && status <= 299,
    output: answeredLine(batch.api, requestId, line.custom_id, {
      status,
      requestId: response.headers.get("x-request-id") ?? requestId,
      body: parseAnswer(text),
    }),
  });
  if (status >= 200 && status <= 299) return answered();
  if (ctx?.stage === "limits" && status === 503) return { kind: "again", due: deps.now() + YIELD_MS, attempts: entry.attempts, reason: "yield" };
  if (ctx?.stage === "limits" && status === 429) return answered();
  if (status === 429 || status >= 500) {
    const retry = again(deps, entry, response.headers.get("retry-after"));
    if (retry) return retry;
  }
  return answered();
}

/** A retry of a line whose attempt failed transiently, while it has attempts left. */
function again(deps: LineRunDeps, entry: Entry, retryAfter: string | null | undefined): (LineOutcome & { kind: "again" }) | undefined {
  const made = entry.attempts + 1;
  if (made >= deps.maxAttempts) return undefined;
  const asked = parseRetryAfter(retryAfter ?? null, deps.now());
  const delay = Math.min(asked ?? retryDelayMs(made, RETRY_BASE_MS, RETRY_MAX_MS), RETRY_MAX_MS);
  return { kind: "again", due: deps.now() + delay, attempts: made, reason: "retry" };
}

function failed(batch: BatchRecord, requestId: string, customId: string, message: string): LineOutcome {
  return { kind: "done", succeeded: false, output: unansweredLine(batch.api, requestId, customId, { code: "request_failed", message }) };
}
