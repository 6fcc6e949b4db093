/** The same gateway on Deno 2 (`deno run -A adapters/deno/cli.ts`). */
import { boot, handleShutdown, listenFailed, type BootOptions } from "../boot.ts";
import { unmetExpectation } from "../expectation.ts";
import { hostRefusal } from "../host-header.ts";
import { repeatsVisible, timesSentOf } from "./header-repeats.ts";
import { denoPlatform } from "./platform.ts";
import { serveOn } from "./serve.ts";

export async function serveGateway(options: BootOptions = {}): Promise<void> {
  const booted = await boot(denoPlatform, "gateway", options);
  if (!repeatsVisible) booted.log.warn("header_repeats_unseen", { message: "this Deno hides repeated request headers: an identity header sent twice is read joined, not refused" });
  let server: Deno.HttpServer;
  try {
    server = serveOn(
      booted.listen,
      {
        onListen: (addr) => {
          booted.log.info("listening", { address: addr.hostname, port: addr.port, runtime: `deno ${Deno.version.deno}` });
          booted.gateway.start();
        },
      },
      // `completed` settles when the response has been sent (rejects if the client went away).
      // Deno's server lets any Expect header through; Node's refuses all but 100-continue (417).
      // It lets a request without Host through too, and does not say whether it came as HTTP/1.0
      // (which may leave Host out): every request needs one here. A second Host it refuses itself.
      (request, info) =>
        hostRefusal(request.headers.has("host") ? 1 : 0, true)?.toResponse() ??
        unmetExpectation(request.headers.get("expect"))?.toResponse() ??
        booted.gateway.fetch(request, { responded: info.completed, timesSent: timesSentOf(request) }),
    );
  } catch (error) {
    // Deno.serve throws at once when it cannot listen (AddrInUse, PermissionDenied).
    await listenFailed(denoPlatform, booted, error);
    throw error; // not reached: listenFailed exits
  }

  handleShutdown(denoPlatform, booted, () => server.shutdown());
}
