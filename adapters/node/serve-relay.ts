/** A standalone relay worker process on Node (`inference-gateway --role relay`). */
import { serve } from "@hono/node-server";
import type { Server } from "node:http";
import { boot, type BootOptions, handleShutdown, listenFailed } from "../boot.ts";
import { nodePlatform } from "./platform.ts";

export async function serveRelay(options: BootOptions = {}): Promise<void> {
  const booted = await boot(nodePlatform, "relay", options);
  const { metrics } = booted;
  // With relay.metrics_addr: /metrics and /health, and the relay's tasks start once it listens.
  const server = metrics && (serve({ fetch: metrics.fetch, hostname: metrics.listen.hostname, port: metrics.listen.port }, (info) => {
    booted.log.info("metrics_listening", { address: info.address, port: info.port, runtime: `node ${process.version}` });
    booted.gateway.start();
  }) as Server);
  server?.once("error", (error) => void listenFailed(nodePlatform, booted, error));
  // Without a listener, the relay's background tasks keep the process alive until a signal.
  const keepAlive = setInterval(() => {}, 1 << 30);
  handleShutdown(nodePlatform, booted, async () => {
    clearInterval(keepAlive);
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
  });
}
