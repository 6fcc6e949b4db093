/**
 * A gateway worker's side of the link to its primary (`server.workers` above 1; see
 * primary.ts). The worker starts from the config text the primary hands it; `POST /-/reload`
 * and `GET /metrics` go to the primary, which reloads every worker together and sums every
 * worker's series; the primary's `stop`, or its going away, stops the worker as SIGTERM does.
 * `node:process` is the same object on Node and Deno, IPC channel included.
 */
import process from "node:process";
import type { Gateway, StagedReload } from "../../core/gateway.ts";
import type { ReloadOutcome } from "../../core/ops.ts";
import type { ShutdownCause, WorkerBoot } from "../boot.ts";
import { type ConfigText, isPrimaryMessage, type PrimaryMessage, WORKER_INDEX_ENV, type WorkerMessage } from "./protocol.ts";

/** The worker that runs the embedded relay (`relay.embedded`), with its whole `relay.concurrency`. */
export const RELAY_WORKER = 1;

export interface WorkerLink extends WorkerBoot {
  /** Hands reloads and `/metrics` to the primary, and stops the worker when the primary says so or is gone. */
  attach(gateway: Gateway, stop: (cause: ShutdownCause) => void): void;
  /** The worker listens: the primary may count it and send it requests. */
  ready(): void;
}

type Answer = { gw: "reloaded"; outcome: ReloadOutcome } | { gw: "metrics"; text?: string; error?: string };

/** This process's link, when its primary started it as a worker; undefined for a gateway run on its own. */
export function workerLink(): WorkerLink | undefined {
  const index = Number(process.env[WORKER_INDEX_ENV]);
  if (!Number.isInteger(index) || index < 1 || typeof process.send !== "function") return undefined;
  const send = (message: WorkerMessage) => {
    if (process.connected) process.send?.(message);
  };

  let config: (ConfigText & { version: number }) | undefined;
  let configArrived: ((text: ConfigText & { version: number }) => void) | undefined;
  /** The version this worker runs: what it started with, then each reload it committed. */
  let running = 0;
  let gateway: Gateway | undefined;
  let stop: ((cause: ShutdownCause) => void) | undefined;
  let readyToSay = false;
  const staged = new Map<number, { version: number; reload: Promise<StagedReload> }>();
  let nextId = 1;
  const waiting = new Map<number, { resolve: (answer: Answer) => void; reject: (error: Error) => void }>();

  /** Sends a request to the primary; its answer, or an error once the primary is gone. */
  function ask(request: "reload?" | "metrics?"): Promise<Answer> {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      if (!process.connected) return reject(new Error("the primary process is gone"));
      waiting.set(id, { resolve, reject });
      send({ gw: request, id });
    });
  }

  async function handle(message: PrimaryMessage): Promise<void> {
    switch (message.gw) {
      case "config":
        config = message;
        running = message.version;
        configArrived?.(message);
        return;
      case "stage": {
        config = message;
        // Gateway.stageReload reads the config through readConfig: now this text.
        const reload = gateway!.stageReload();
        staged.set(message.id, { version: message.version, reload });
        send({ gw: "staged", id: message.id, outcome: (await reload).outcome });
        return;
      }
      case "commit": {
        const entry = staged.get(message.id);
        staged.delete(message.id);
        if (entry) {
          (await entry.reload).commit();
          running = entry.version;
        }
        send({ gw: "committed", id: message.id });
        return;
      }
      case "discard": {
        const entry = staged.get(message.id);
        staged.delete(message.id);
        await (await entry?.reload)?.discard();
        return;
      }
      case "collect":
        send({ gw: "snapshot", id: message.id, metrics: await gateway!.runtime.deps.metrics.snapshot() });
        return;
      case "reloaded":
      case "metrics": {
        const request = waiting.get(message.id);
        waiting.delete(message.id);
        request?.resolve(message);
        return;
      }
      case "stop":
        stop?.({ reason: "primary_stop" });
        return;
    }
  }

  process.on("message", (message: unknown) => {
    if (isPrimaryMessage(message)) void handle(message);
  });
  // The primary exited (or was killed): nothing will stop this worker or reload it any more.
  process.on("disconnect", () => {
    for (const request of waiting.values()) request.reject(new Error("the primary process is gone"));
    waiting.clear();
    stop?.({ reason: "primary_gone" });
  });

  return {
    index,
    runsRelay: index === RELAY_WORKER,
    async readConfig() {
      if (!config) {
        const arrived = new Promise<ConfigText & { version: number }>((resolve) => (configArrived = resolve));
        send({ gw: "config?" });
        await arrived;
      }
      if (config?.error !== undefined || config?.text === undefined) throw new Error(config?.error ?? "the primary process sent no config");
      return config.text;
    },
    attach(attached, stopWorker) {
      gateway = attached;
      stop = stopWorker;
      attached.reloadWith(async () => {
        try {
          const answer = await ask("reload?");
          if (answer.gw === "reloaded") return answer.outcome;
        } catch (error) {
          return { ok: false, cause: "failure", problems: [(error as Error).message] };
        }
        return { ok: false, cause: "failure", problems: ["the primary process gave no answer to the reload"] };
      });
      attached.runtime.deps.metrics.answerWith(async () => {
        const answer = await ask("metrics?");
        if (answer.gw !== "metrics" || answer.text === undefined) {
          throw new Error(`the sum of the workers' metrics is not available: ${(answer.gw === "metrics" && answer.error) || "no answer"}`);
        }
        return answer.text;
      });
      if (readyToSay) send({ gw: "ready", version: running });
    },
    ready() {
      // Listening may be reported before `attach`: the primary hears of it once both are done.
      readyToSay = true;
      if (gateway) send({ gw: "ready", version: running });
    },
  };
}
