/** `npx deno task start`: the same gateway on Deno 2. */
import { boot, handleShutdown, listenFailed } from "../boot.ts";
import { repeatsVisible, timesSentOf } from "./header-repeats.ts";
import { denoPlatform } from "./platform.ts";

const booted = await boot(denoPlatform, "gateway");
if (!repeatsVisible) booted.log.warn("header_repeats_unseen", { message: "this Deno hides repeated request headers: an identity header sent twice is read joined, not refused" });
const { hostname, port } = booted.listen;
let server: Deno.HttpServer;
try {
  server = Deno.serve(
    {
      hostname: hostname ?? "0.0.0.0",
      port,
      onListen: (addr) => {
        booted.log.info("listening", { address: addr.hostname, port: addr.port, runtime: `deno ${Deno.version.deno}` });
        booted.gateway.start();
      },
    },
    // `completed` settles when the response has been sent (rejects if the client went away).
    (request, info) => booted.gateway.fetch(request, { responded: info.completed, timesSent: timesSentOf(request) }),
  );
} catch (error) {
  // Deno.serve throws at once when it cannot listen (AddrInUse, PermissionDenied).
  await listenFailed(denoPlatform, booted, error);
  throw error; // not reached: listenFailed exits
}

handleShutdown(denoPlatform, booted, () => server.shutdown());
