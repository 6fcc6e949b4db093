/**
 * DNS rebinding: a delivery attempt connects to exactly the addresses its SSRF check vetted,
 * through the runtime's own pinned client (Node's or Deno's platform, whichever runs this
 * file), with the callback's name kept in the Host header and the TLS server name. Real
 * sockets on loopback; the resolver is injected, so its answer can change between calls.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Platform } from "../../../adapters/boot.ts";
import { attemptDelivery, type AttemptSettings } from "../../../plugins/webhooks/attempt.ts";
import { onDeno } from "../../support/gateway-process.ts";

let platform: Platform;
beforeAll(async () => {
  // The Deno adapter is not part of the Node type check, hence the specifier in a variable.
  const path = onDeno ? "../../../adapters/deno/platform.ts" : "../../../adapters/node/platform.ts";
  const module = (await import(/* @vite-ignore */ path)) as Record<string, Platform>;
  platform = module[onDeno ? "denoPlatform" : "nodePlatform"];
});

interface Received {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const servers: Array<Server | TlsServer> = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function listen<T extends Server | TlsServer>(server: T): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** A receiver on 127.0.0.1 that records every request it gets. */
async function receiver(): Promise<{ port: number; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ method: request.method ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      response.writeHead(200).end("ok");
    });
  });
  return { port: await listen(server), received };
}

/** A resolver whose answers come from a script, one per call (the last one repeats). */
function changingResolver(answers: string[][]) {
  const asked: string[] = [];
  const lookupHost = async (host: string) => {
    asked.push(host);
    return answers[Math.min(asked.length - 1, answers.length - 1)];
  };
  return { lookupHost, asked };
}

function settings(lookupHost: AttemptSettings["lookupHost"], allowPrivateNetworks: boolean, timeoutMs = 2000): AttemptSettings {
  return { fetchPinned: platform.fetchPinned, lookupHost, allowPrivateNetworks, signingSecret: "", timeoutMs, now: () => Date.now() };
}

const body = JSON.stringify({ job_id: "job-1", status: "completed" });

describe(`webhook delivery connects to the vetted address (${onDeno ? "Deno" : "Node"})`, () => {
  it("a name that answers a public address to the check and loopback afterwards never gets the POST to loopback", async () => {
    const { port, received } = await receiver();
    // "localhost" is also what the system resolver answers 127.0.0.1 for: a client that
    // resolved the name again at connection time would reach the receiver.
    const dns = changingResolver([["192.0.2.1"], ["127.0.0.1"]]);
    const url = `http://localhost:${port}/hook`;

    const first = await attemptDelivery({ url, jobId: "job-1", body }, settings(dns.lookupHost, false, 1000));
    // The connection went to 192.0.2.1 (unreachable here): a network error or a timeout, retried.
    expect(first).toMatchObject({ delivered: false, retry: true });
    expect(received).toEqual([]);

    // The next attempt's check sees the loopback answer and refuses the target for good.
    const second = await attemptDelivery({ url, jobId: "job-1", body }, settings(dns.lookupHost, false));
    expect(second).toEqual({
      delivered: false,
      retry: false,
      error: "callback_url host localhost (127.0.0.1) is a loopback address; set webhooks.allow_private_networks: true to allow loopback and private targets",
    });
    expect(received).toEqual([]);
    expect(dns.asked).toEqual(["localhost", "localhost"]);
  });

  it("delivers to the vetted address with the callback's name in the Host header", async () => {
    const { port, received } = await receiver();
    // The .test name resolves nowhere but in the injected resolver.
    const dns = changingResolver([["127.0.0.1"]]);
    const outcome = await attemptDelivery(
      { url: `http://hooks.rebind.test:${port}/done?x=1`, jobId: "job-2", body },
      settings(dns.lookupHost, true),
    );
    expect(outcome).toEqual({ delivered: true, status: 200 });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: "POST", body });
    expect(received[0].headers).toMatchObject({ host: `hooks.rebind.test:${port}`, "x-job-id": "job-2", "content-type": "application/json" });
    expect(dns.asked).toEqual(["hooks.rebind.test"]);
  });

  it("over https, connects to the vetted address and asks for the callback's name (SNI)", async () => {
    const serverNames: string[] = [];
    // No certificate: the handshake fails once the server has seen the ClientHello's name.
    const tls = createTlsServer({
      SNICallback: (name, done) => {
        serverNames.push(name);
        done(new Error("no certificate here"), undefined);
      },
    });
    tls.on("tlsClientError", () => {});
    const port = await listen(tls);
    const outcome = await attemptDelivery(
      { url: `https://hooks.rebind.test:${port}/done`, jobId: "job-3", body },
      settings(changingResolver([["127.0.0.1"]]).lookupHost, true),
    );
    expect(outcome).toMatchObject({ delivered: false, retry: true, error: expect.stringMatching(/^network error/) });
    expect(serverNames).toEqual(["hooks.rebind.test"]);
  });
});
