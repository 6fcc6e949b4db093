/**
 * The workers of `server.workers` on Deno, which has no working `node:cluster`: the primary
 * runs this same command again once per worker (the same `deno run` flags, plus
 * `--unstable-net`), with an IPC channel (`node:child_process`, which Deno implements), and
 * each worker listens on the port itself with `reusePort`: Linux's SO_REUSEPORT, where the
 * kernel spreads the connections over the sockets bound to one port. Elsewhere (macOS, the
 * BSDs, Windows) the option does not spread them, so workers are refused there.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { WorkerLauncher } from "../workers/primary.ts";
import { WORKER_INDEX_ENV } from "../workers/protocol.ts";

export function denoWorkersUnsupported(): string | undefined {
  if (Deno.build.os !== "linux") {
    return `Deno shares a port between processes only on Linux (reusePort), and this is ${Deno.build.os}: run the gateway on Node (node:cluster), or with server.workers: 1 and one replica per port`;
  }
  if (Deno.permissions.querySync({ name: "run" }).state !== "granted") {
    return "starting the workers needs the permission to run processes: start Deno with --allow-run (or --allow-all, as deno task start does)";
  }
  return undefined;
}

/**
 * The command line of a worker: this process's own (`deno`, `run`, its flags, the entry module,
 * its arguments), read from /proc (Linux: the only system workers run on), with the flag
 * `reusePort` needs.
 */
function workerCommand(): string[] {
  const line = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
  if (line[line.length - 1] === "") line.pop();
  // A `deno compile`d gateway: the executable is the program, its flags built in.
  if (line[1] !== "run") return [...Deno.args];
  // [deno, run, ...flags, module, ...Deno.args]
  const moduleAt = line.length - Deno.args.length - 1;
  const flags = line.slice(2, moduleAt);
  if (!flags.some((flag) => flag === "--unstable-net" || flag === "--unstable")) flags.unshift("--unstable-net");
  return ["run", ...flags, fileURLToPath(Deno.mainModule), ...Deno.args];
}

export function denoWorkerLauncher(): WorkerLauncher {
  const args = workerCommand();
  return (index) => {
    const child = spawn(Deno.execPath(), args, {
      env: { ...Deno.env.toObject(), [WORKER_INDEX_ENV]: String(index) },
      stdio: ["inherit", "inherit", "inherit", "ipc"],
    });
    return {
      pid: child.pid,
      send(message) {
        if (child.connected) child.send(message);
      },
      onMessage: (listener) => void child.on("message", listener),
      onExit: (listener) => void child.on("exit", (code, signal) => listener(code, signal)),
      kill: (signal) => void child.kill(signal),
    };
  };
}
