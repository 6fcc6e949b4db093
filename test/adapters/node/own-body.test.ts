/**
 * A gateway stream written to Node's response without a web stream (adapters/node/own-body.ts),
 * seen by a client over HTTP: status, headers and every chunk; headers that do not wait for a
 * late first chunk; a client that leaves cancels the body; a body that fails cuts the response.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { sentOwnBody } from "../../../adapters/node/own-body.ts";
import { type PullSource, SourcedResponse } from "../../../core/proxy/own-body-response.ts";
import { waitUntil } from "../../support/gateway-process.ts";

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server answering every request with `answer()` through `sentOwnBody`; its base URL. */
async function serving(answer: () => Response): Promise<string> {
  server = createServer((_req, res) => {
    if (!sentOwnBody(res, answer())) res.writeHead(500).end("not written as an own body");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

/** A source whose chunks the test releases one by one; it records a cancel. */
function heldSource() {
  const waiting: Array<(chunk: string | null) => void> = [];
  const state = { cancelled: false as boolean, pulls: 0 };
  const source: PullSource = {
    async pull(controller) {
      state.pulls++;
      const chunk = await new Promise<string | null>((resolve) => waiting.push(resolve));
      if (chunk === null) controller.close();
      else controller.enqueue(new TextEncoder().encode(chunk));
    },
    cancel() {
      state.cancelled = true;
      for (const release of waiting.splice(0)) release(null);
    },
  };
  const release = async (chunk: string | null) => {
    await waitUntil(() => waiting.length > 0, 5000, () => "the source was not pulled");
    waiting.shift()!(chunk);
  };
  return { source, state, release };
}

describe("a gateway stream written to Node's response", () => {
  it("sends the status, the headers (each Set-Cookie its own) and every chunk, then ends", async () => {
    const parts = ["data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"];
    const base = await serving(() =>
      new SourcedResponse({
        pull(controller) {
          const next = parts.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      }, { status: 201, headers: [["content-type", "text/event-stream"], ["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-model", "m"]] })
    );
    const response = await fetch(base);
    expect(response.status).toBe(201);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(response.headers.get("x-model")).toBe("m");
    expect(await response.text()).toBe("data: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
  });

  it("sends the headers without waiting for a first chunk that is late", async () => {
    const held = heldSource();
    const base = await serving(() => new SourcedResponse(held.source, { headers: { "content-type": "text/event-stream" } }));
    // fetch resolves with the headers, while the source still holds its first chunk.
    const response = await fetch(base);
    expect(response.status).toBe(200);
    expect(held.state.pulls).toBe(1);
    await held.release("data: late\n\n");
    await held.release(null);
    expect(await response.text()).toBe("data: late\n\n");
  });

  it("cancels the body when the client leaves mid-stream", async () => {
    const held = heldSource();
    const base = await serving(() => new SourcedResponse(held.source, { headers: { "content-type": "text/event-stream" } }));
    const client = new AbortController();
    const response = await fetch(base, { signal: client.signal });
    await held.release("data: 1\n\n");
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: 1\n\n");
    client.abort();
    await waitUntil(() => held.state.cancelled, 5000, () => "the body was not cancelled");
  });

  it("cuts the response when the body fails, so the client sees an incomplete answer", async () => {
    let sent = false;
    const base = await serving(() =>
      new SourcedResponse({
        pull(controller) {
          if (sent) throw new Error("the source broke");
          sent = true;
          controller.enqueue(new TextEncoder().encode("data: 1\n\n"));
        },
      }, { headers: { "content-type": "text/event-stream" } })
    );
    // Cut before or after the headers went out: either way an error, never a clean end.
    await expect(fetch(base).then((response) => response.text())).rejects.toThrow();
  });

  it("leaves an answer whose body is already read, or not its own, to the server", async () => {
    const base = await serving(() => {
      const used = new SourcedResponse({ pull: (controller) => controller.close() }, {});
      void used.body;
      return used;
    });
    expect((await fetch(base)).status).toBe(500);
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    const plain = await serving(() => new Response("plain"));
    expect(await (await fetch(plain)).text()).toBe("not written as an own body");
  });
});
