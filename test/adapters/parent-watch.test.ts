/**
 * What the parent watch follows, on a process table the test writes (/proc as Linux shows it):
 * this process's parent, then the wrapper's own processes (those a task runner started, by
 * their environment) up to the command the user ran; and which change counts as gone. The
 * real wrappers (npx, npm start, deno task) are in test/e2e/cli.test.ts.
 */
import { describe, expect, it } from "vitest";
import { brokenLink, type ProcessTable, watchParent, wrapperLinks } from "../../adapters/parent-watch.ts";

interface FakeProcess {
  parent: number;
  command: string;
  wrapped: boolean;
}

/** `npx deno task start` from a login shell: bash 100 > npm 200 > sh 300 > deno task 400 > the gateway. */
function npxDenoTask() {
  const processes = new Map<number, FakeProcess>([
    [100, { parent: 1, command: "bash", wrapped: false }],
    [200, { parent: 100, command: "npm exec deno task start", wrapped: false }],
    [300, { parent: 200, command: "sh", wrapped: true }],
    [400, { parent: 300, command: "deno", wrapped: true }],
  ]);
  let parent = 400;
  const table: ProcessTable = {
    parentPid: () => parent,
    readProcFile(path) {
      const [, , pid, file] = path.split("/");
      const process = processes.get(Number(pid));
      if (!process) return undefined;
      if (file === "stat") return `${pid} (${process.command}) S ${process.parent} ${pid} 100 0 -1 4194560`;
      return (process.wrapped ? ["HOME=/root", "npm_config_user_agent=npm/11 node/v20", "PATH=/bin"] : ["HOME=/root", "PATH=/bin"]).join("\0") + "\0";
    },
  };
  return { processes, table, orphan: (pid: number) => (processes.get(pid)!.parent = 1), setParent: (pid: number) => (parent = pid) };
}

describe("parent watch", () => {
  it("follows this process's parent and the wrapper's processes, up to the command the user ran", () => {
    const { table } = npxDenoTask();
    expect(wrapperLinks(table)).toEqual([
      { pid: 0, parent: 400 },
      { pid: 400, parent: 300 },
      { pid: 300, parent: 200 },
    ]);
  });

  it("reads the parent after the command name, whatever spaces and parentheses it holds", () => {
    const { processes, table } = npxDenoTask();
    processes.get(400)!.command = "deno (task) 7 S 9";
    expect(wrapperLinks(table)[1]).toEqual({ pid: 400, parent: 300 });
  });

  it("nothing broken while every process keeps its parent", () => {
    const { table } = npxDenoTask();
    expect(brokenLink(table, wrapperLinks(table))).toBeUndefined();
  });

  it("the user's command killed: the wrapper's shell adopted (SIGKILL) or gone with deno's task runner adopted (SIGTERM) is noticed", () => {
    const killed = npxDenoTask();
    const links = wrapperLinks(killed.table);
    killed.processes.delete(200);
    killed.orphan(300);
    expect(brokenLink(killed.table, links)).toEqual({ pid: 300, parent: 200 });

    const terminated = npxDenoTask();
    const before = wrapperLinks(terminated.table);
    terminated.processes.delete(200);
    terminated.processes.delete(300);
    terminated.orphan(400);
    expect(brokenLink(terminated.table, before)).toEqual({ pid: 400, parent: 300 });
  });

  it("this process adopted after its parent exited is noticed without /proc", () => {
    let parent = 4242;
    const table: ProcessTable = { parentPid: () => parent, readProcFile: () => undefined };
    const links = wrapperLinks(table);
    expect(links).toEqual([{ pid: 0, parent: 4242 }]);
    expect(brokenLink(table, links)).toBeUndefined();
    parent = 1;
    expect(brokenLink(table, links)).toEqual({ pid: 0, parent: 4242 });
  });

  it("the user's login shell exiting is not the wrapper's business: nohup npx keeps serving", () => {
    const { processes, table } = npxDenoTask();
    const links = wrapperLinks(table);
    processes.delete(100);
    processes.get(200)!.parent = 1;
    expect(brokenLink(table, links)).toBeUndefined();
  });

  it("watches nothing when no task runner started the process (node, deno run, a supervisor)", () => {
    const { table } = npxDenoTask();
    expect(watchParent(table, { HOME: "/root" }, () => {})).toBeUndefined();
    const stop = watchParent(table, { npm_config_user_agent: "npm/11" }, () => {});
    expect(stop).toBeTypeOf("function");
    stop?.();
  });
});
