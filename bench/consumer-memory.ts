/**
 * `node --experimental-websocket dist/bench/consumer-memory.js [--consumers N] [--models N] [--config prod-memory|prod-redis]`
 * (built by `npm run bench`): the gateway's memory per consumer. The gateway (the bench's
 * production config: consumer header, rate and token limits, usage, the top-consumer gauge)
 * answers warm-up requests from one consumer, then one LLM request from each of N new
 * consumers; the V8 heap in use after a full GC (through the inspector) before and after,
 * divided by N, is what each consumer costs while its limit windows last (a minute), and
 * what stays once they expired (its usage record, its place in the usage indexes and the
 * top-consumer counts), measured again after the windows' expiry when `--after-expiry` is given.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool } from "undici";
import { ArgvReader } from "./args.ts";
import { gatewayConfig } from "./config.ts";
import { freePort } from "../test/support/servers.ts";
import { startGateway, startSideServices } from "./gateway.ts";
import { specFor } from "./matrix.ts";
import { CONSUMER_HEADER, isValid, withRandomModel } from "./load/spec.ts";
import { OTHER_CORE, pinProcess, type Service } from "./procs.ts";
import { SCENARIOS } from "./scenarios.ts";
import { InspectorSession } from "./soak-inspector.ts";

const USAGE = `node --experimental-websocket dist/bench/consumer-memory.js [options]
  --consumers N     new consumers, one request each (default 20000)
  --models N        LLM services on the chat path, each request's drawn at random (default 1)
  --config prod-memory|prod-redis   the store (default prod-memory)
  --after-expiry    also measure after the limit windows expired (waits 65 s)`;

interface Options {
  consumers: number;
  models: number;
  config: "prod-memory" | "prod-redis";
  afterExpiry: boolean;
}

function parse(argv: readonly string[]): Options {
  const options: Options = { consumers: 20_000, models: 1, config: "prod-memory", afterExpiry: false };
  const reader = new ArgvReader(argv, USAGE);
  for (let arg = reader.next(); arg !== undefined; arg = reader.next()) {
    if (arg === "--consumers") options.consumers = Math.round(reader.positive(arg));
    else if (arg === "--models") options.models = Math.round(reader.positive(arg));
    else if (arg === "--config") options.config = reader.choice(arg, ["prod-memory", "prod-redis"] as const);
    else if (arg === "--after-expiry") options.afterExpiry = true;
    else throw reader.unknown(arg);
  }
  return options;
}

async function main(): Promise<void> {
  const options = parse(process.argv.slice(2));
  pinProcess(process.pid, OTHER_CORE);
  const workDir = mkdtempSync(join(tmpdir(), "gateway-consumer-memory-"));
  const services: Service[] = [];
  try {
    const { mockUrl, redisAddr } = await startSideServices(workDir, options.config, services);
    const configPath = join(workDir, "gateway.yaml");
    writeFileSync(
      configPath,
      gatewayConfig({ mockUrl, objectDir: join(workDir, "objects"), production: true, redisAddr, relay: false, models: options.models }),
    );
    const inspectPort = await freePort();
    const gateway = await startGateway({ runtime: "node", name: "gateway", configPath, runtimeFlags: [`--inspect=127.0.0.1:${inspectPort}`] });
    services.push(gateway.service);
    const inspector = await InspectorSession.connect(inspectPort);
    const spec = specFor(SCENARIOS.growth, gateway.target, { consumers: 1, models: options.models });
    const pool = new Pool(gateway.target.base, { connections: 16 });
    const text = spec.body.toString();
    let wrong = 0;
    let sequence = 0;
    const send = async (count: number, consumer: (n: number) => string) => {
      let started = 0;
      const worker = async () => {
        while (started < count) {
          const n = started++;
          const body = withRandomModel(spec, text.replace(spec.uniqueMarker ?? "", `m-${sequence++}`));
          const answer = await pool.request({
            path: new URL(spec.url).pathname,
            method: "POST",
            headers: { ...spec.headers, [CONSUMER_HEADER]: consumer(n) },
            body,
          });
          if (isValid(spec, answer.statusCode, await answer.body.text()) !== "ok") wrong++;
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
    };
    // Warm-up: code, pools, every model's series, one consumer's records.
    await send(Math.max(2000, options.models * 3), () => "warm-up");
    const before = await inspector.collectGarbage();
    await send(options.consumers, (n) => `consumer-${n}`);
    // The end-of-turn writes have landed once a request after them answered.
    await send(16, () => "warm-up");
    const after = await inspector.collectGarbage();
    const perConsumer = ((after - before) * 1024 * 1024) / options.consumers;
    const lines = [
      `${options.config}, ${options.models} models: heap after a full GC ${before.toFixed(1)} MB, after ${options.consumers} new consumers ${
        after.toFixed(1)
      } MB: ${perConsumer.toFixed(0)} bytes per consumer (its limit windows included)`,
    ];
    if (options.afterExpiry) {
      await new Promise((resolve) => setTimeout(resolve, 65_000));
      // A request lets the embedded store sweep what expired.
      await send(16, () => "warm-up");
      const expired = await inspector.collectGarbage();
      lines.push(
        `after the limit windows expired: ${expired.toFixed(1)} MB: ${(((expired - before) * 1024 * 1024) / options.consumers).toFixed(0)} bytes per consumer`,
      );
    }
    process.stdout.write(`${lines.join("\n")}\n`);
    inspector.close();
    await pool.close();
    if (wrong > 0) {
      process.stderr.write(`${wrong} wrong answers\n`);
      process.exitCode = 1;
    }
  } finally {
    for (const service of services.reverse()) await service.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(2);
});
