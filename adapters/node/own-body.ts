/**
 * An answer whose body the gateway holds itself (core/proxy/own-body-response.ts: the LLM
 * streams) written to Node's response chunk by chunk, without the web stream that
 * @hono/node-server would read it through: on Node 20 building one costs 15-30 µs and each
 * chunk read through it a chain of promises (docs/design.md#streaming). The headers go out with
 * the first chunk when it comes at once (one write instead of two), else on their own. As
 * node-server does: backpressure waits for "drain", a client that leaves cancels the body (which
 * stops the backend), a body that fails destroys the response.
 */
import type { ServerResponse } from "node:http";
import { BODY_CHUNKS, type ChunkedBody, type ChunkReader } from "../../core/proxy/body-chunks.ts";

/** Response headers as Node's `writeHead` takes them, each Set-Cookie its own. */
function outgoingHeaders(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of headers) if (name !== "set-cookie") out[name] = value;
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  return out;
}

/** Until the response can take more, or is gone. */
function drained(outgoing: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      outgoing.off("drain", done);
      outgoing.off("close", done);
      resolve();
    };
    outgoing.once("drain", done);
    outgoing.once("close", done);
  });
}

async function pump(outgoing: ServerResponse, reader: ChunkReader): Promise<void> {
  const leave = () => void reader.cancel().catch(() => {});
  outgoing.once("close", leave);
  const early = setImmediate(() => outgoing.flushHeaders());
  try {
    for (;;) {
      const chunk = await reader.read();
      clearImmediate(early);
      if (outgoing.destroyed) return;
      if (chunk.done) {
        outgoing.end();
        return;
      }
      if (!outgoing.write(chunk.value)) await drained(outgoing);
    }
  } catch (error) {
    outgoing.destroy(error instanceof Error ? error : new Error(String(error)));
  } finally {
    clearImmediate(early);
    outgoing.off("close", leave);
  }
}

/** Writes `response` to `outgoing` when its body is the gateway's own (true), else leaves it (false). */
export function sentOwnBody(outgoing: ServerResponse, response: Response): boolean {
  const take = (response as Response & ChunkedBody)[BODY_CHUNKS];
  if (!take || outgoing.headersSent || outgoing.destroyed) return false;
  const reader = take.call(response);
  if (!reader) return false;
  try {
    outgoing.writeHead(response.status, outgoingHeaders(response.headers));
  } catch (error) {
    // Headers Node refuses: the server answers the error; the body (and its backend) is let go.
    void reader.cancel(error).catch(() => {});
    throw error;
  }
  void pump(outgoing, reader);
  return true;
}
