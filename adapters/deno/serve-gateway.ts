/**
 * The same gateway on Deno 2 (`deno run -A adapters/deno/cli.ts`): one process, or with
 * `server.workers` above 1 a primary (adapters/workers/primary.ts) and its workers, each of
 * which serves here on the shared port (`reusePort`, see ./workers.ts).
 */
import { boot, type BootOptions, configSource, handleShutdown, listenFailed } from "../boot.ts";
import { unmetExpectation } from "../expectation.ts";
import { hostRefusal } from "../host-header.ts";
import { workerMetrics } from "../workers/metrics.ts";
import { workersWanted } from "../workers/plan.ts";
import { runPrimary } from "../workers/primary.ts";
import { type WorkerLink, workerLink } from "../workers/worker.ts";
import { repeatsVisible, timesSentOf } from "./header-repeats.ts";
import { denoPlatform } from "./platform.ts";
import { serveOn } from "./serve.ts";
import { denoWorkerLauncher } from "./workers.ts";

export async function serveGateway(options: BootOptions = {}): Promise<void> {
  const link = workerLink();
  if (link) return await serve(options, link);
  const count = await workersWanted(denoPlatform, options);
  if (count === 1) return await serve(options);
  await runPrimary(denoPlatform, {
    count,
    configPath: configSource(denoPlatform, options).path,
    launch: denoWorkerLauncher(),
    runtime: `deno ${Deno.version.deno}`,
  });
}

/** This process serves: the only one, or one worker of several (`link`). */
async function serve(options: BootOptions, link?: WorkerLink): Promise<void> {
  const booted = await boot(denoPlatform, "gateway", options, link);
  if (!repeatsVisible) {
    booted.log.warn("header_repeats_unseen", {
      message: "this Deno hides repeated request headers: an identity header sent twice is read joined, not refused",
    });
  }
  let server: Deno.HttpServer;
  try {
    server = serveOn(
      booted.listen,
      {
        // Workers bind the same port, each its own socket; the kernel spreads the connections.
        reusePort: link !== undefined,
        onListen: (addr) => {
          booted.log.info("listening", { address: addr.hostname, port: addr.port, runtime: `deno ${Deno.version.deno}` });
          booted.gateway.start();
          link?.ready();
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

  const stop = handleShutdown(denoPlatform, booted, () => server.shutdown());
  if (link) link.attach(booted.gateway, stop);
  else workerMetrics(booted.gateway.runtime.deps.metrics, () => 1);
}
