/**
 * The gateway's HTTP server on Node (`inference-gateway`, adapters/node/cli.ts): one process,
 * or with `server.workers` above 1 a primary (adapters/workers/primary.ts) and its workers,
 * each of which serves here.
 */
import type { HttpBindings } from "@hono/node-server";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { boot, type BootOptions, configSource, handleShutdown, listenFailed } from "../boot.ts";
import { workerMetrics } from "../workers/metrics.ts";
import { workersWanted } from "../workers/plan.ts";
import { runPrimary } from "../workers/primary.ts";
import { type WorkerLink, workerLink } from "../workers/worker.ts";
import { timesSentIn } from "./header-repeats.ts";
import { clientGoneOf } from "./client-gone.ts";
import { answerHttpLayerErrors } from "./http-layer-errors.ts";
import { nodePlatform } from "./platform.ts";
import { gatewayRequestListener } from "./request-listener.ts";
import { respondedOf } from "./responded.ts";
import { sentOwnBody } from "./own-body.ts";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { serverOptions } from "./server-options.ts";
import { closeIfBodyUnread } from "./unread-body.ts";
import { launchNodeWorker } from "./workers.ts";

export async function serveGateway(options: BootOptions = {}): Promise<void> {
  const link = workerLink();
  if (link) return await serve(options, link);
  const count = await workersWanted(nodePlatform, options);
  if (count === 1) return await serve(options);
  await runPrimary(nodePlatform, {
    count,
    configPath: configSource(nodePlatform, options).path,
    launch: launchNodeWorker,
    runtime: `node ${process.version}`,
  });
}

/** This process serves: the only one, or one worker of several (`link`). */
async function serve(options: BootOptions, link?: WorkerLink): Promise<void> {
  const booted = await boot(nodePlatform, "gateway", options, link);
  const { hostname, port } = booted.listen;
  const fetch = (request: Request, env: HttpBindings) =>
    closeIfBodyUnread(
      env,
      booted.gateway.fetch(request, {
        responded: respondedOf(env.outgoing),
        target: env.incoming.url,
        timesSent: timesSentIn(env.incoming.rawHeaders),
        // Not the request's `signal`: node-server builds an AbortController for it once read.
        clientGone: clientGoneOf(env),
        ownBodies: true,
      }),
    ).then((response) => (sentOwnBody(env.outgoing, response) ? RESPONSE_ALREADY_SENT : response));
  const server = createServer(serverOptions(booted.timeouts), gatewayRequestListener(fetch, hostname));
  server.listen(port, hostname, () => {
    const info = server.address() as AddressInfo;
    booted.log.info("listening", { address: info.address, port: info.port, runtime: `node ${process.version}` });
    booted.gateway.start();
    link?.ready();
  });
  // A failed listen (EADDRINUSE, EACCES) is emitted here; unhandled, Node would print a stack trace.
  server.once("error", (error) => void listenFailed(nodePlatform, booted, error));
  server.timeout = booted.timeouts.write;
  answerHttpLayerErrors(server);

  const stop = handleShutdown(nodePlatform, booted, () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    }));
  if (link) link.attach(booted.gateway, stop);
  else workerMetrics(booted.gateway.runtime.deps.metrics, () => 1);
}
