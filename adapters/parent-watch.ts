/**
 * Stopping what the user started stops the gateway. `npx inference-gateway`, `npm start` and
 * `deno task start` run it under a wrapper (npm, a shell, deno's task runner) that does not
 * always pass a SIGTERM on, and nothing can pass a SIGKILL on: the gateway was left serving,
 * orphaned. So when a package manager's task runner started it, the gateway watches its parent
 * and, where /proc tells (Linux), the wrapper's processes between it and the command the user
 * ran: when one exits, or is adopted because its own parent exited, the gateway shuts down as
 * on SIGTERM. Started without a wrapper (`node`, `deno run`, a supervisor, a container) it
 * watches nothing: a launcher that exits on purpose (nohup from a script, a daemonizer) must
 * not stop it. Runtime-free: each adapter passes its `ProcessTable`.
 */

/** Set by npm (scripts and npx), yarn, pnpm and deno task for the commands they run. */
const WRAPPER_MARK = "npm_config_user_agent";
const CHECK_EVERY_MS = 1000;
/** How far up the wrapper's processes are followed (npx deno task: a shell and deno's task runner). */
const MAX_ANCESTORS = 8;

export interface ProcessTable {
  /** This process's parent now: it changes when the parent exits and another process adopts this one. */
  parentPid(): number;
  /** A file of /proc as text; undefined when it cannot be read (another system, the process is gone). */
  readProcFile(path: string): string | undefined;
}

/** A process and the parent it had when the watch began; `pid` 0 is this process. */
export interface WatchedLink {
  pid: number;
  parent: number;
}

/** A process's parent, from /proc/PID/stat: the field after the state, which follows the command name (spaces and parentheses allowed in it). */
function parentOf(table: ProcessTable, pid: number): number | undefined {
  const stat = table.readProcFile(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  return Number.isInteger(parent) && parent > 0 ? parent : undefined;
}

function startedByWrapper(table: ProcessTable, pid: number): boolean {
  const environ = table.readProcFile(`/proc/${pid}/environ`);
  return environ !== undefined && environ.split("\0").some((entry) => entry.startsWith(`${WRAPPER_MARK}=`));
}

/** This process with its parent, then each ancestor a wrapper started (the wrapper's shell, deno's task runner) with its own. */
export function wrapperLinks(table: ProcessTable): WatchedLink[] {
  const links: WatchedLink[] = [{ pid: 0, parent: table.parentPid() }];
  let pid = links[0].parent;
  while (links.length <= MAX_ANCESTORS && pid > 1 && startedByWrapper(table, pid)) {
    const parent = parentOf(table, pid);
    if (parent === undefined) break;
    links.push({ pid, parent });
    pid = parent;
  }
  return links;
}

/** The first link that broke: its process exited, or lost the parent it had. */
export function brokenLink(table: ProcessTable, links: readonly WatchedLink[]): WatchedLink | undefined {
  return links.find((link) => (link.pid === 0 ? table.parentPid() : parentOf(table, link.pid)) !== link.parent);
}

/**
 * Under a wrapper (`env` carries its mark), checks every second whether the processes that
 * started this one are still there, and calls `onGone` once when one is not. Returns what
 * stops the watch; undefined when there is nothing to watch.
 */
export function watchParent(
  table: ProcessTable,
  env: Readonly<Record<string, string | undefined>>,
  onGone: (link: WatchedLink) => void,
): (() => void) | undefined {
  if (env[WRAPPER_MARK] === undefined) return undefined;
  const links = wrapperLinks(table);
  const timer = setInterval(() => {
    const broken = brokenLink(table, links);
    if (!broken) return;
    clearInterval(timer);
    onGone(broken);
  }, CHECK_EVERY_MS);
  return () => clearInterval(timer);
}
