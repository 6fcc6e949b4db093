/**
 * The Node adapter's client-gone notice (adapters/node/client-gone.ts), on a real node:http
 * server: it tells a client that went away before its answer (listeners called once, with
 * node-server's reason), not one whose answer was finished, and reads the state right when
 * first asked after the fact.
 */
import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { clientGoneOf } from "../../../adapters/node/client-gone.ts";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server whose handler the test drives; resolves with the first exchange and a way to drop the client. */
async function exchange(): Promise<{ incoming: IncomingMessage; outgoing: ServerResponse; dropClient: () => void; answered: Promise<void> }> {
  let got!: (value: { incoming: IncomingMessage; outgoing: ServerResponse }) => void;
  const first = new Promise<{ incoming: IncomingMessage; outgoing: ServerResponse }>((resolve) => (got = resolve));
  server = createServer((incoming, outgoing) => got({ incoming, outgoing }));
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", () => resolve()));
  const client = httpRequest({ port: (server.address() as AddressInfo).port, host: "127.0.0.1", method: "POST" });
  client.on("error", () => {});
  const answered = new Promise<void>((resolve) => client.on("response", (response) => response.resume().on("end", () => resolve())));
  client.end("{}");
  return { ...(await first), dropClient: () => client.destroy(), answered };
}

const closed = (outgoing: ServerResponse) => new Promise<void>((resolve) => (outgoing.closed ? resolve() : outgoing.once("close", () => resolve())));

describe("clientGoneOf (Node)", () => {
  it("tells the listeners once when the client goes away before its answer", async () => {
    const { incoming, outgoing, dropClient } = await exchange();
    const gone = clientGoneOf({ incoming, outgoing });
    let calls = 0;
    let removed = 0;
    const listener = () => calls++;
    const other = () => removed++;
    gone.addEventListener("abort", listener, { once: true });
    gone.addEventListener("abort", other);
    gone.removeEventListener("abort", other);
    expect(gone.aborted).toBe(false);
    dropClient();
    await closed(outgoing);
    expect(gone.aborted).toBe(true);
    expect(String(gone.reason)).toMatch(/aborted|prematurely closed/);
    expect(calls).toBe(1);
    expect(removed).toBe(0);
  });

  it("asked only after the client went away: aborted at once", async () => {
    const { incoming, outgoing, dropClient } = await exchange();
    dropClient();
    await closed(outgoing);
    const gone = clientGoneOf({ incoming, outgoing });
    expect(gone.aborted).toBe(true);
  });

  it("a finished answer is no client going away", async () => {
    const { incoming, outgoing, answered } = await exchange();
    const gone = clientGoneOf({ incoming, outgoing });
    let calls = 0;
    gone.addEventListener("abort", () => calls++);
    outgoing.end("ok");
    await answered;
    await closed(outgoing);
    expect(gone.aborted).toBe(false);
    expect(calls).toBe(0);
  });
});
