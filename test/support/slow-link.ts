/**
 * A TCP relay in front of a local port whose uplink is slow: what clients send reaches the
 * server at `bytesPerTick` every `tickMs` (answers come back at full speed). A client that
 * writes its whole request at once thus believes it sent it long before the server has read it,
 * as over a slow network.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface SlowLink {
  port: number;
  close(): Promise<void>;
}

export async function startSlowLink(targetPort: number, { bytesPerTick = 64 * 1024, tickMs = 50 } = {}): Promise<SlowLink> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    let clientEnded = false;
    const timer = setInterval(() => {
      if (pending.length > 0 && upstream.writable) {
        upstream.write(pending.subarray(0, bytesPerTick));
        pending = pending.subarray(bytesPerTick);
      }
      if (pending.length === 0 && clientEnded) upstream.end();
    }, tickMs);
    client.on("data", (chunk: Buffer) => (pending = Buffer.concat([pending, chunk])));
    client.on("end", () => (clientEnded = true));
    upstream.pipe(client);
    // The server closed: pass on what it said, then close the client's side too.
    const done = () => {
      clearInterval(timer);
      pending = Buffer.alloc(0);
      client.end();
    };
    upstream.on("close", done);
    upstream.on("error", done);
    client.on("error", () => upstream.destroy());
    client.on("close", () => {
      clearInterval(timer);
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
