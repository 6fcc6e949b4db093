/**
 * `deno task test`: what the suite runs again on Deno. `npm test` runs every test on Node;
 * running all of them a second time on Deno doubled CI for little: most tests check the
 * gateway's own logic, which is the same code on both runtimes. Deno runs the tests whose
 * outcome can depend on the runtime:
 * - the store adapters and the core (the runtime's streams, timers, crypto, fetch under them);
 * - one end-to-end file per mode (sync proxy, LLM proxy and its inbound Messages API, async jobs), each a real gateway
 *   process on Deno (adapters/deno) in front of fake backends;
 * - the tests of runtime behaviour: the command line (cli), the HTTP server itself (http-layer, header repeats in
 *   identity-headers), start/reload/signals/shutdown (foundation, a standalone relay's exit
 *   in relay-metrics, several workers sharing a port in workers), a plugin loaded from outside the repo, webhook delivery through the
 *   runtime's pinned client, backend retry rounds (the runtime's timers between rounds), a
 *   frozen Redis under the runtime's sockets, the in-process async-jobs tests (the runtime's
 *   fetch sends the upload), and OTLP export (the OpenTelemetry SDK under Deno).
 * To run any other file on Deno: `npx deno task test:all test/path/file.test.ts`.
 */
import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

export const denoSubset = [
  "test/adapters/*.test.ts",
  "test/core/**/*.test.ts",
  "test/e2e/sync-proxy.test.ts",
  "test/e2e/llm-proxy.test.ts",
  "test/e2e/llm-streams.test.ts",
  "test/e2e/messages-in.test.ts",
  "test/e2e/backend-retry.test.ts",
  "test/e2e/llm-stream-cache.test.ts",
  "test/e2e/async-jobs.test.ts",
  "test/e2e/http-layer.test.ts",
  "test/e2e/identity-headers.test.ts",
  "test/e2e/foundation.test.ts",
  "test/e2e/relay-metrics.test.ts",
  "test/e2e/workers.test.ts",
  "test/e2e/plugin-entry-point.test.ts",
  "test/e2e/otel.test.ts",
  "test/e2e/default-metrics.test.ts",
  "test/e2e/cli.test.ts",
  "test/e2e/console.test.ts",
  "test/plugins/webhooks/pinned-delivery.test.ts",
  "test/plugins/async-jobs/jobs.test.ts",
  "test/reliability/frozen-redis.test.ts",
  // Sentinel failover and Cluster primary restart: node-redis's Sentinel client on Deno once
  // kept failing after a failover (fixed with the held primary connection, link-sentinel.ts).
  "test/reliability/scale-out.test.ts",
];

export default defineConfig({ test: { ...base.test, include: denoSubset } });
