/**
 * The primary of `server.workers` gateway processes: it serves nothing itself. It starts the
 * workers (the runtime's launcher: node:cluster on Node, processes sharing the port on Deno),
 * and makes them one gateway from outside:
 * - config: it reads the file and hands the same text to every worker, at start and on reload;
 * - `POST /-/reload` on any worker: every worker builds and checks the new config, and only
 *   when all accept it do they all swap to it; else all keep the old one (one answer);
 * - `GET /metrics` on any worker: the sum of every worker's series, with `svc_workers` and
 *   `svc_worker_restarts_total` (metrics.ts);
 * - SIGTERM / SIGINT: every worker stops as one process does (work in flight finishes); the
 *   primary exits once they all have. A second signal ends them at once;
 * - a worker that exits unexpectedly is started again after a growing delay; workers that keep
 *   dying soon after their start make the primary stop them all and exit with status 1.
 */
import { Metrics, type MetricsSnapshot } from "../../core/metrics.ts";
import type { ReloadOutcome } from "../../core/ops.ts";
import { createLogger, type LogLevel } from "../../core/log.ts";
import type { Platform } from "../boot.ts";
import { watchParent } from "../parent-watch.ts";
import { sumOfProcesses, workerMetrics } from "./metrics.ts";
import { type ConfigText, isWorkerMessage, type PrimaryMessage, type WorkerMessage } from "./protocol.ts";
import { afterExit, SOON_AFTER_START_MS } from "./restarts.ts";

/** One worker process, as the runtime's launcher started it. */
export interface WorkerProcess {
  readonly pid: number | undefined;
  send(message: PrimaryMessage): void;
  onMessage(listener: (message: unknown) => void): void;
  onExit(listener: (code: number | null, signal: string | null) => void): void;
  kill(signal: "SIGTERM" | "SIGKILL"): void;
}

/** Starts worker number `index` (1..N): the same gateway command, as a worker (protocol.ts `WORKER_INDEX_ENV`). */
export type WorkerLauncher = (index: number) => WorkerProcess;

/** How long a worker may take to answer the primary (a reload's check, its metrics). */
const ANSWER_TIMEOUT_MS = 60_000;
const METRICS_TIMEOUT_MS = 5_000;

interface Slot {
  index: number;
  process?: WorkerProcess;
  startedAt: number;
  /** Listening, with `version` of the config. */
  ready: boolean;
  version: number;
  /** Started once and listened at least once. */
  everReady: boolean;
  /** Deaths in a row, each soon after the start. */
  soonDeaths: number;
  restartTimer?: ReturnType<typeof setTimeout>;
  /** Answers this worker owes, by `${kind}:${id}`. */
  waiting: Map<string, (message: WorkerMessage | undefined) => void>;
}

export interface PrimaryOptions {
  count: number;
  configPath: string;
  launch: WorkerLauncher;
  /** Runtime, for the `workers_started` line. */
  runtime: string;
}

export async function runPrimary(platform: Platform, options: PrimaryOptions): Promise<void> {
  const { count, configPath, launch } = options;
  // JSON lines like every gateway process's, marked as the primary's.
  const log = createLogger({ level: (platform.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: { role: "gateway", process: "primary" } });
  const metrics = new Metrics();
  const slots: Slot[] = Array.from(
    { length: count },
    (_, i) => ({ index: i + 1, startedAt: 0, ready: false, version: 0, everReady: false, soonDeaths: 0, waiting: new Map() }),
  );
  const serving = () => slots.filter((slot) => slot.ready).length;
  const counters = workerMetrics(metrics, serving);

  let config: ConfigText & { version: number } = { version: 1, ...(await readConfig()) };
  let nextId = 1;
  let stopping = false;
  /** The status to exit with once every worker has stopped. */
  let exitCode = 0;
  let allStartedLogged = false;
  // deno-lint-ignore prefer-const -- read by shutdown (above its assignment), which may run before the watch starts
  let unwatch: (() => void) | undefined;
  let firstReady!: () => void;
  const firstStarted = new Promise<void>((resolve) => (firstReady = resolve));
  /** Reloads (and catching a late worker up) one at a time. */
  let reloads: Promise<unknown> = Promise.resolve();

  async function readConfig(): Promise<ConfigText> {
    try {
      return { text: await platform.readTextFile(configPath) };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  function ask(slot: Slot, message: PrimaryMessage & { id: number }, answer: WorkerMessage["gw"], timeoutMs: number): Promise<WorkerMessage | undefined> {
    const key = `${answer}:${message.id}`;
    return new Promise((resolve) => {
      if (!slot.process) return resolve(undefined);
      const timer = setTimeout(() => {
        slot.waiting.delete(key);
        resolve(undefined);
      }, timeoutMs);
      slot.waiting.set(key, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      slot.process.send(message);
    });
  }

  function start(slot: Slot): void {
    slot.ready = false;
    slot.startedAt = Date.now();
    const worker = launch(slot.index);
    slot.process = worker;
    worker.onMessage((message) => {
      if (isWorkerMessage(message)) void onMessage(slot, worker, message);
    });
    worker.onExit((code, signal) => onExit(slot, worker, code, signal));
  }

  async function onMessage(slot: Slot, worker: WorkerProcess, message: WorkerMessage): Promise<void> {
    switch (message.gw) {
      case "config?":
        worker.send({ gw: "config", ...config });
        return;
      case "ready":
        slot.ready = true;
        slot.everReady = true;
        slot.version = message.version;
        if (slot.index === 1) firstReady();
        if (!allStartedLogged && slots.every((s) => s.ready)) {
          allStartedLogged = true;
          log.info("workers_started", { workers: count, pids: slots.map((s) => s.process?.pid), runtime: options.runtime });
        }
        // Started from a config a reload has replaced since: brought to the current one.
        if (message.version < config.version) void serially(() => catchUp(slot));
        return;
      case "reload?": {
        const outcome = await serially(reloadAll);
        worker.send({ gw: "reloaded", id: message.id, outcome });
        return;
      }
      case "metrics?": {
        try {
          worker.send({ gw: "metrics", id: message.id, text: await metricsOfAll() });
        } catch (error) {
          worker.send({ gw: "metrics", id: message.id, error: (error as Error).message });
        }
        return;
      }
      case "staged":
      case "committed":
      case "snapshot": {
        const key = `${message.gw}:${message.id}`;
        const resolve = slot.waiting.get(key);
        slot.waiting.delete(key);
        resolve?.(message);
        return;
      }
    }
  }

  function serially<T>(work: () => Promise<T>): Promise<T> {
    const next = reloads.then(work);
    reloads = next.catch(() => undefined);
    return next;
  }

  /** Every serving worker checks the new file; all swap to it, or none does. */
  async function reloadAll(): Promise<ReloadOutcome> {
    const next = { version: config.version + 1, ...(await readConfig()) };
    const id = nextId++;
    const targets = slots.filter((slot) => slot.ready);
    const answers = await Promise.all(targets.map((slot) => ask(slot, { gw: "stage", id, ...next }, "staged", ANSWER_TIMEOUT_MS)));
    const outcomes = answers.map((answer, i): ReloadOutcome =>
      answer?.gw === "staged"
        ? answer.outcome
        : { ok: false, cause: "failure", problems: [`worker ${targets[i].index} stopped or did not answer while checking the new config`] }
    );
    const refused = outcomes.find((outcome) => !outcome.ok);
    if (refused || targets.length === 0) {
      for (const slot of targets) slot.process?.send({ gw: "discard", id });
      return refused ?? { ok: false, cause: "failure", problems: ["no worker is serving"] };
    }
    config = next;
    await Promise.all(targets.map((slot) => ask(slot, { gw: "commit", id }, "committed", ANSWER_TIMEOUT_MS)));
    for (const slot of targets) slot.version = next.version;
    log.info("workers_reloaded", { workers: targets.length, version: next.version });
    return outcomes[0];
  }

  /** A worker that started from an older config than the others run now takes the current one. */
  async function catchUp(slot: Slot): Promise<void> {
    if (!slot.ready || slot.version >= config.version) return;
    const id = nextId++;
    const answer = await ask(slot, { gw: "stage", id, ...config }, "staged", ANSWER_TIMEOUT_MS);
    if (answer?.gw !== "staged" || !answer.outcome.ok) {
      slot.process?.send({ gw: "discard", id });
      log.warn("worker_config_behind", {
        worker: slot.index,
        message: "a worker started while a reload was applied and could not take the new config; it runs the previous one until the next reload",
      });
      return;
    }
    await ask(slot, { gw: "commit", id }, "committed", ANSWER_TIMEOUT_MS);
    slot.version = config.version;
  }

  async function metricsOfAll(): Promise<string> {
    const id = nextId++;
    const answers = await Promise.all(slots.filter((slot) => slot.ready).map((slot) => ask(slot, { gw: "collect", id }, "snapshot", METRICS_TIMEOUT_MS)));
    const snapshots: MetricsSnapshot[] = answers.flatMap((answer) => (answer?.gw === "snapshot" ? [answer.metrics] : []));
    return await sumOfProcesses([...snapshots, await metrics.snapshot()]);
  }

  function onExit(slot: Slot, worker: WorkerProcess, code: number | null, signal: string | null): void {
    if (slot.process !== worker) return;
    slot.process = undefined;
    slot.ready = false;
    for (const resolve of slot.waiting.values()) resolve(undefined);
    slot.waiting.clear();
    if (stopping) {
      exitOnceStopped();
      return;
    }
    // The first worker could not start (its own line said why: a port in use...): neither can the rest.
    if (!slot.everReady && slot.index === 1 && !slots.some((s) => s.everReady)) {
      log.error("workers_not_started", { worker: slot.index, code, signal, message: "the first worker exited before it listened; see its message above" });
      stopAll(code || 1);
      return;
    }
    const next = afterExit(slot.soonDeaths, Date.now() - slot.startedAt);
    slot.soonDeaths = next.soonDeaths;
    if ("giveUp" in next) {
      log.error("workers_crash_loop", {
        worker: slot.index,
        deaths: next.soonDeaths,
        code,
        signal,
        message: `worker ${slot.index} exited ${next.soonDeaths} times in a row, each within ${
          SOON_AFTER_START_MS / 1000
        } s of its start: stopping every worker and exiting; see the workers' lines above for why they exit`,
      });
      stopAll(1);
      return;
    }
    const delay = next.restartInMs;
    log.warn("worker_exited", { worker: slot.index, pid: worker.pid, code, signal, restart_in_ms: delay });
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      if (stopping) return;
      counters.restarted();
      start(slot);
      log.info("worker_restarted", { worker: slot.index, pid: slot.process?.pid });
    }, delay);
  }

  /** Every worker stops as on SIGTERM; the primary exits with `code` once they all have. */
  function stopAll(code: number): void {
    stopping = true;
    exitCode = Math.max(exitCode, code);
    firstReady();
    unwatch?.();
    for (const slot of slots) {
      if (slot.restartTimer) clearTimeout(slot.restartTimer);
      slot.process?.send({ gw: "stop" });
    }
    exitOnceStopped();
  }

  function exitOnceStopped(): void {
    if (slots.some((slot) => slot.process)) return;
    log.info("stopped", { workers: count, code: exitCode });
    platform.exit(exitCode);
  }

  // As one process: SIGTERM / SIGINT drain every worker; a second signal ends them now.
  platform.onSignals(["SIGTERM", "SIGINT"], (signal) => {
    if (stopping) {
      log.warn("shutdown_forced", { signal, message: "a second signal while stopping: ending every worker without waiting for in-flight work" });
      for (const slot of slots) slot.process?.kill("SIGKILL");
      platform.exit(1);
    }
    log.info("shutdown", { signal, workers: count });
    stopAll(0);
  });
  unwatch = watchParent(platform.processes, platform.env, (link) => {
    if (stopping) return;
    log.warn("parent_gone", {
      ...(link.pid === 0 ? { parent: link.parent } : { wrapper_process: link.pid, its_parent: link.parent }),
      message: "the command that started the gateway (npx, npm, deno task) is gone, and its signal may never come: shutting down as on SIGTERM",
    });
    log.info("shutdown", { reason: "parent_gone", workers: count });
    stopAll(0);
  });

  log.info("workers_starting", { workers: count, config: configPath });
  // The first worker alone: a start that fails (a port in use) then fails once, not once per worker.
  start(slots[0]);
  await firstStarted;
  if (!stopping) { for (const slot of slots.slice(1)) start(slot); }
}
