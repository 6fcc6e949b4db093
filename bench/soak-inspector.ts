/**
 * A DevTools-protocol session with the gateway (started with `--inspect=127.0.0.1:PORT`, Node
 * and Deno alike), used only to run a full garbage collection before each sample: without
 * it RSS follows V8's heap sizing (a sawtooth tens of MB high, minutes long), so a 5-minute
 * trend would measure when the last major GC ran rather than what the gateway keeps.
 * Node 20 needs `--experimental-websocket` for the global WebSocket (npm run soak passes it).
 */

interface Reply {
  id?: number;
  result?: Record<string, unknown>;
  error?: { message: string };
}

export class InspectorSession {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (reply: Reply) => void; reject: (error: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    socket.addEventListener("message", (event) => {
      const reply = JSON.parse(String(event.data)) as Reply;
      if (reply.id === undefined) return;
      this.waiting.get(reply.id)?.resolve(reply);
      this.waiting.delete(reply.id);
    });
    socket.addEventListener("close", () => {
      for (const { reject } of this.waiting.values()) reject(new Error("inspector connection closed"));
      this.waiting.clear();
    });
  }

  /** Connects to the first target the inspector at `port` lists, polling until it answers. */
  static async connect(port: number, timeoutMs = 30_000): Promise<InspectorSession> {
    if (typeof WebSocket === "undefined") throw new Error("no global WebSocket: run the soak with node --experimental-websocket (Node 20) or Node 22+");
    const deadline = Date.now() + timeoutMs;
    let url: string | undefined;
    while (url === undefined) {
      try {
        const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ webSocketDebuggerUrl?: string }>;
        url = targets.find((t) => t.webSocketDebuggerUrl)?.webSocketDebuggerUrl;
      } catch {
        // Not listening yet.
      }
      if (url === undefined) {
        if (Date.now() > deadline) throw new Error(`no inspector target on 127.0.0.1:${port}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("error", () => reject(new Error(`cannot open ${url}`)), { once: true });
    });
    return new InspectorSession(socket);
  }

  private call(method: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, {
        resolve: (reply) => (reply.error ? reject(new Error(`${method}: ${reply.error.message}`)) : resolve(reply.result ?? {})),
        reject,
      });
      this.socket.send(JSON.stringify({ id, method }));
    });
  }

  /** Full GC, then the V8 heap in use (MB): what survives is what the gateway keeps. */
  async collectGarbage(): Promise<number> {
    await this.call("HeapProfiler.collectGarbage");
    const usage = await this.call("Runtime.getHeapUsage");
    return Number(usage.usedSize) / 1024 / 1024;
  }

  close(): void {
    this.socket.close();
  }
}
