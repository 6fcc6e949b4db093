/**
 * The messages between the primary process and its gateway workers (`server.workers` above 1),
 * over the IPC channel both runtimes give a forked process (`process.send`, `process.on("message")`).
 * Every message carries `gw` (its kind), so a message of anything else on the channel is ignored.
 */
import type { MetricsSnapshot } from "../../core/metrics.ts";
import type { ReloadOutcome } from "../../core/ops.ts";

/** The environment variable that makes a gateway process a worker, and tells it its number (1..N). */
export const WORKER_INDEX_ENV = "GATEWAY_WORKER_INDEX";

/**
 * The config file as the primary read it: its text, or why it could not be read. Every worker
 * builds from the same text, so workers never run two versions of a file edited in between.
 */
export interface ConfigText {
  text?: string;
  /** The read error's message (`text` is absent). */
  error?: string;
}

/** From a worker to the primary. */
export type WorkerMessage =
  /** The config to start with. */
  | { gw: "config?" }
  /** Listening, built from config `version`. */
  | { gw: "ready"; version: number }
  /** A `POST /-/reload` came in: reload every worker. */
  | { gw: "reload?"; id: number }
  /** A `GET /metrics` came in: the sum over every worker. */
  | { gw: "metrics?"; id: number }
  /** Answers to the primary's `stage`, `commit` and `collect`. */
  | { gw: "staged"; id: number; outcome: ReloadOutcome }
  | { gw: "committed"; id: number }
  | { gw: "snapshot"; id: number; metrics: MetricsSnapshot };

/** From the primary to a worker. */
export type PrimaryMessage =
  | ({ gw: "config"; version: number } & ConfigText)
  /** Build the runtime of this config and say whether it is valid; do not use it yet. */
  | ({ gw: "stage"; id: number; version: number } & ConfigText)
  /** Every worker staged it: swap it in. */
  | { gw: "commit"; id: number }
  /** Some worker refused it: drop it. */
  | { gw: "discard"; id: number }
  /** This worker's own series, for the sum. */
  | { gw: "collect"; id: number }
  /** Answers to the worker's `reload?` and `metrics?`. */
  | { gw: "reloaded"; id: number; outcome: ReloadOutcome }
  | { gw: "metrics"; id: number; text?: string; error?: string }
  /** Stop as on SIGTERM: finish the work in flight, then exit. */
  | { gw: "stop" };

function hasKind(message: unknown): message is { gw: unknown } {
  return typeof message === "object" && message !== null && "gw" in message;
}

export function isWorkerMessage(message: unknown): message is WorkerMessage {
  return hasKind(message) && typeof message.gw === "string";
}

export function isPrimaryMessage(message: unknown): message is PrimaryMessage {
  return hasKind(message) && typeof message.gw === "string";
}
