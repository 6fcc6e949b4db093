/**
 * The workers of `server.workers` on Node: `node:cluster` forks this same command (its
 * arguments and Node flags) once per worker; the workers' servers share the listening socket,
 * which the primary holds and hands connections from in turn.
 */
import cluster from "node:cluster";
import type { WorkerLauncher } from "../workers/primary.ts";
import { WORKER_INDEX_ENV } from "../workers/protocol.ts";

export const launchNodeWorker: WorkerLauncher = (index) => {
  const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
  return {
    pid: worker.process.pid,
    send(message) {
      if (worker.isConnected()) worker.send(message);
    },
    onMessage: (listener) => void worker.on("message", listener),
    onExit: (listener) => void worker.on("exit", (code, signal) => listener(code, signal)),
    kill: (signal) => void worker.process.kill(signal),
  };
};
