/**
 * The webhook receiver fixture (test/fixtures/webhook-receiver.ts) as a process of its own,
 * Node through tsx and Deno directly, so a gateway killed in a test cannot take it along.
 */
import { join } from "node:path";
import type { ReceivedDelivery } from "../fixtures/webhook-receiver.ts";
import { onDeno, repoRoot } from "./gateway-process.ts";
import { freePort, spawnListening } from "./servers.ts";

export interface ReceiverProcess {
  url: string;
  /** Every delivery received so far, or only those of one job. */
  received(jobId?: string): Promise<ReceivedDelivery[]>;
  stop(): Promise<void>;
}

export async function startReceiverProcess(): Promise<ReceiverProcess> {
  const port = await freePort();
  const file = join(repoRoot, "test/fixtures/webhook-receiver.ts");
  const args = onDeno ? ["run", "--allow-all", file] : ["--import", "tsx", file];
  const child = await spawnListening(process.execPath, [...args, "--port", String(port)], port, { cwd: repoRoot, timeoutMs: 30_000 });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async received(jobId) {
      const response = await fetch(`${url}/received${jobId ? `?job=${jobId}` : ""}`);
      return (await response.json()) as ReceivedDelivery[];
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
