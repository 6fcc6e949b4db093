/** A standalone relay worker process on Deno (`adapters/deno/cli.ts --role relay`). */
import { boot, type BootOptions, handleShutdown, listenFailed } from "../boot.ts";
import { denoPlatform } from "./platform.ts";
import { serveOn } from "./serve.ts";

export async function serveRelay(options: BootOptions = {}): Promise<void> {
  const booted = await boot(denoPlatform, "relay", options);
  const { metrics } = booted;
  // With relay.metrics_addr: /metrics and /health, and the relay's tasks start once it listens.
  let server: Deno.HttpServer | undefined;
  if (metrics) {
    try {
      server = serveOn(
        metrics.listen,
        {
          onListen: (addr) => {
            booted.log.info("metrics_listening", { address: addr.hostname, port: addr.port, runtime: `deno ${Deno.version.deno}` });
            booted.gateway.start();
          },
        },
        (request) => metrics.fetch(request),
      );
    } catch (error) {
      // Deno.serve throws at once when it cannot listen (AddrInUse, PermissionDenied).
      await listenFailed(denoPlatform, booted, error);
      throw error; // not reached: listenFailed exits
    }
  }
  // Without a listener, the relay's background tasks keep the process alive until a signal.
  const keepAlive = setInterval(() => {}, 1 << 30);
  handleShutdown(denoPlatform, booted, async () => {
    clearInterval(keepAlive);
    await server?.shutdown();
  });
}
