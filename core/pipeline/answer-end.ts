/**
 * Runs a request's `beforeEnd` steps before the client can have its whole answer.
 *
 * - A body in memory (whole-body.ts) or none: the steps are awaited before the Response is
 *   handed to the server.
 * - A streamed body: it is passed through chunk by chunk, and the steps are awaited before the
 *   last byte goes out: before the stream closes (which writes the end of a chunked body) and,
 *   when the response declares a Content-Length, before the chunk that completes that length
 *   (a client has its answer with that chunk, whatever follows). A body that fails or that the
 *   client abandons runs them too; when the server adapter says when the response is done
 *   (`responded`), that also runs them, for a body the server never read.
 * - A body stream the gateway built with an end hook (end-hook.ts, the LLM streams): the
 *   stream itself awaits the steps before it closes, and runs them when the client leaves it;
 *   one that already ended before it got here (its first read ended it) is a whole body: the
 *   steps are awaited before the Response is handed over.
 *
 * The steps run once, concurrently (each is usually one store round trip), and never fail the
 * answer: a step's error is logged.
 */
import type { Logger } from "../log.ts";
import type { EndStep } from "./context.ts";
import { freeEndHook } from "./end-hook.ts";
import { isWhole } from "./whole-body.ts";
import { BODY_CHUNKS, type ChunkedBody, defaultChunkReader } from "../proxy/body-chunks.ts";
import { type PullSource, SourcedResponse } from "../proxy/own-body-response.ts";

function runSteps(steps: readonly EndStep[], status: number, log: Logger): Promise<void> {
  const running: Promise<void>[] = [];
  for (const step of steps) {
    try {
      const result = step(status);
      if (result) running.push(result.catch((error: unknown) => log.error("request_end_step_failed", { error })));
    } catch (error) {
      log.error("request_end_step_failed", { error });
    }
  }
  return running.length === 0 ? Promise.resolve() : Promise.all(running).then(() => undefined);
}

function declaredLength(headers: Headers): number | undefined {
  const value = headers.get("content-length");
  if (value === null) return undefined;
  const length = Number(value);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

export interface EndOptions {
  log: Logger;
  /** Settles once the server has sent the response or the client went away (see `Gateway.fetch`). */
  responded?: PromiseLike<unknown>;
}

/** `response`, with `steps` done before its end reaches the client (see the file comment). */
export async function endBeforeLastByte(response: Response, steps: readonly EndStep[], options: EndOptions): Promise<Response> {
  const { log } = options;
  // Before `isWhole`, which reads `.body` (see whole-body.ts) when the mark is not there.
  const hook = freeEndHook(response);
  if (!hook && isWhole(response)) {
    await runSteps(steps, response.status, log);
    return response;
  }
  let ending: Promise<void> | undefined;
  const end = () => (ending ??= runSteps(steps, response.status, log));
  if (options.responded) options.responded.then(end, end);
  if (hook?.ended) {
    await end();
    return response;
  }
  if (hook) {
    // The body's own stream runs them before it closes (end-hook.ts): no stream around it.
    hook.steps = end;
    return response;
  }

  // An own-body Response's chunks are read as they are (no web stream on either side, where the
  // server writes such bodies itself: core/proxy/own-body-response.ts); any other's from its stream.
  const own = (response as Response & ChunkedBody)[BODY_CHUNKS]?.();
  const reader = own ?? defaultChunkReader(response.body as ReadableStream<Uint8Array>);
  const declared = declaredLength(response.headers);
  let sent = 0;
  const source: PullSource = {
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) {
          await end();
          controller.close();
          return;
        }
        sent += chunk.value.byteLength;
        if (declared !== undefined && sent >= declared) await end();
        controller.enqueue(chunk.value);
      } catch (error) {
        controller.error(error);
        void end();
      }
    },
    async cancel(reason) {
      void end();
      await reader.cancel(reason);
    },
  };
  const init = { status: response.status, statusText: response.statusText, headers: response.headers };
  return own ? new SourcedResponse(source, init) : new Response(new ReadableStream(source), init);
}
