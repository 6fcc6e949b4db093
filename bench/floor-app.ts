/**
 * The framework floor's one route, the same on both runtimes (bench/framework-floor.ts on Node,
 * bench/deno-floor/framework-floor.ts on Deno): the body read whole, forwarded with `backend`,
 * the answer read whole, an event stream passed on as `stream` gives it.
 */
import { Hono } from "hono";
import { forwardHeaders, responseHeaders } from "../core/proxy/headers.ts";

export function floorApp(
  target: string,
  backend: typeof fetch,
  stream: (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>,
): Hono {
  const app = new Hono();
  app.all("*", async (c) => {
    const request = c.req.raw;
    const url = new URL(request.url);
    const body = request.method === "GET" || request.method === "HEAD" ? null : new Uint8Array(await request.arrayBuffer());
    const answer = await backend(`${target}${url.pathname}${url.search}`, {
      method: request.method,
      headers: forwardHeaders(request.headers),
      body,
      redirect: "manual",
    });
    const headers = responseHeaders(answer.headers);
    if (answer.body && (answer.headers.get("content-type") ?? "").includes("text/event-stream")) {
      return new Response(stream(answer.body), { status: answer.status, headers });
    }
    return new Response(new Uint8Array(await answer.arrayBuffer()), { status: answer.status, headers });
  });
  return app;
}
