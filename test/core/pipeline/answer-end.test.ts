/**
 * `ctx.beforeEnd` (core/pipeline/answer-end.ts): the steps are done before the client can
 * have its whole answer, for every kind of body, and exactly once however the answer ends.
 * Each step here is held until the test lets it finish, and the test checks what the client
 * can read meanwhile.
 */
import { describe, expect, it } from "vitest";
import { createLogger, silentLogger } from "../../../core/log.ts";
import { RequestState } from "../../../core/pipeline/context.ts";
import { Pipeline } from "../../../core/pipeline/pipeline.ts";
import { wholeBody } from "../../../core/pipeline/whole-body.ts";
import { type EndHook, withEndHook } from "../../../core/pipeline/end-hook.ts";
import { passSource, passStream } from "../../../core/llm/stream.ts";
import { bodyChunks, chunkReader } from "../../../core/proxy/body-chunks.ts";
import { ChunksResponse, OwnBodyResponse, SourcedResponse } from "../../../core/proxy/own-body-response.ts";

const encoder = new TextEncoder();

/** A step the test finishes by hand; counts its runs and records the status it got. */
function heldStep() {
  const step = { runs: 0, status: 0, done: false, finish: () => {} };
  const run = (status: number) => {
    step.runs++;
    step.status = status;
    return new Promise<void>((resolve) => {
      step.finish = () => {
        step.done = true;
        resolve();
      };
    });
  };
  return { step, run };
}

/** Whether `promise` settles within a few turns of the event loop (none of its steps is held). */
async function settlesSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 5 && !settled; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  return settled;
}

function run(response: () => Response, options: { responded?: PromiseLike<unknown> } = {}) {
  const held = heldStep();
  const ctx = new RequestState(new Request("http://gateway.test/v1/echo", { method: "POST" }), "sync", "echo", 0, options.responded);
  const answer = new Pipeline(silentLogger).run(ctx, {
    resolve: (c) => void c.beforeEnd(held.run),
    handle: response,
  });
  return { step: held.step, answer };
}

/** A body the test feeds by hand. */
function fedBody() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return { stream, push: (text: string) => controller.enqueue(encoder.encode(text)), close: () => controller.close() };
}

describe("ctx.beforeEnd", () => {
  it("a body in memory: the Response is handed over only once the steps are done", async () => {
    const { step, answer } = run(() => wholeBody(Response.json({ ok: true }, { status: 201 })));
    expect(await settlesSoon(answer)).toBe(false);
    expect(step.runs).toBe(1);
    expect(step.status).toBe(201);
    step.finish();
    const response = await answer;
    expect(await response.json()).toEqual({ ok: true });
    expect(step.runs).toBe(1);
  });

  it("an error the pipeline answers: the steps are done before the error Response is handed over", async () => {
    const { step, answer } = run(() => {
      throw new Error("handler broke");
    });
    expect(await settlesSoon(answer)).toBe(false);
    expect(step.status).toBe(500);
    step.finish();
    expect((await answer).status).toBe(500);
  });

  it("a streamed body of declared length: the chunk that completes the length waits for the steps", async () => {
    const body = fedBody();
    const { step, answer } = run(() => new Response(body.stream, { headers: { "content-length": "8" } }));
    const reader = ((await answer).body as ReadableStream<Uint8Array>).getReader();
    body.push("1234");
    expect((await reader.read()).value?.byteLength).toBe(4);
    body.push("5678");
    const last = reader.read();
    expect(await settlesSoon(last)).toBe(false);
    expect(step.done).toBe(false);
    step.finish();
    expect(new TextDecoder().decode((await last).value)).toBe("5678");
    body.close();
    expect((await reader.read()).done).toBe(true);
    expect(step.runs).toBe(1);
  });

  it("a stream with an end hook (core/llm/stream.ts) is handed over as it is, and runs the steps after its onEnd", async () => {
    const body = fedBody();
    const hook: EndHook = {};
    const order: string[] = [];
    const handed = withEndHook(new Response(passStream(body.stream, () => {}, { endHook: hook, onEnd: () => order.push("onEnd") })), hook);
    const { step, answer } = run(() => handed);
    const response = await answer;
    // No second stream around the body: the pipeline gave the steps to the stream.
    expect(response).toBe(handed);
    const end = (response.body as ReadableStream<Uint8Array>).getReader().read();
    body.close();
    expect(await settlesSoon(end)).toBe(false);
    expect(order).toEqual(["onEnd"]);
    expect(step.runs).toBe(1);
    step.finish();
    expect((await end).done).toBe(true);
  });

  it("a stream with an end hook that ended before it was handed over (its first read ended it): the steps are done before the Response is", async () => {
    const body = fedBody();
    body.close();
    const hook: EndHook = {};
    const handed = withEndHook(new Response(passStream(body.stream, () => {}, { endHook: hook })), hook);
    // The stream's first read runs as the stream is built: here it finds the (empty) body's end.
    for (let i = 0; i < 5 && !hook.ended; i++) await new Promise((resolve) => setTimeout(resolve, 0));
    expect(hook.ended).toBe(true);
    const { step, answer } = run(() => handed);
    expect(await settlesSoon(answer)).toBe(false);
    expect(step.runs).toBe(1);
    step.finish();
    expect(await (await answer).text()).toBe("");
    expect(step.runs).toBe(1);
  });

  it("a body the server never reads: the steps run when the server says the response is done", async () => {
    let responded!: () => void;
    const done = new Promise<void>((resolve) => (responded = resolve));
    const { step, answer } = run(() => new Response(fedBody().stream), { responded: done });
    await answer;
    expect(step.runs).toBe(0);
    responded();
    await done;
    expect(step.runs).toBe(1);
  });

  it("a step that fails is logged; the answer is unaffected", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const ctx = new RequestState(new Request("http://gateway.test/v1/echo", { method: "POST" }), "sync", "echo", 0);
    const response = await new Pipeline(log).run(ctx, {
      resolve: (c) => void c.beforeEnd(() => Promise.reject(new Error("store down"))),
      handle: () => wholeBody(Response.json({ ok: true })),
    });
    expect(await response.json()).toEqual({ ok: true });
    expect(lines.map((l) => l.event)).toContain("request_end_step_failed");
  });
});

/**
 * The kinds of streamed body: a stream of the handler's own, one of core/llm/stream.ts that runs
 * the steps itself (end-hook.ts), and both as own bodies, whose chunks a server adapter takes
 * without a web stream (core/proxy/own-body-response.ts). Each is read as a server reads it
 * (`bodyChunks`: the own chunks when there are, else the body's stream).
 */
const STREAMED = [
  { kind: "a streamed body", make: (stream: ReadableStream<Uint8Array>) => new Response(stream) },
  {
    kind: "a stream with an end hook",
    make: (stream: ReadableStream<Uint8Array>) => {
      const hook: EndHook = {};
      return withEndHook(new Response(passStream(stream, () => {}, { endHook: hook })), hook);
    },
  },
  { kind: "an own body (a relayed backend's chunks)", make: (stream: ReadableStream<Uint8Array>) => new ChunksResponse(chunkReader(stream), {}) },
  {
    kind: "an own body with an end hook",
    make: (stream: ReadableStream<Uint8Array>) => {
      const hook: EndHook = {};
      return withEndHook(new SourcedResponse(passSource(stream, () => {}, { endHook: hook }), {}), hook);
    },
  },
];

describe.each(STREAMED)("ctx.beforeEnd, $kind", ({ make }) => {
  it("chunks flow at once, the end of the body waits for the steps", async () => {
    const body = fedBody();
    const { step, answer } = run(() => make(body.stream));
    const reader = bodyChunks(await answer)!;
    body.push("data: 1\n\n");
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: 1\n\n");
    expect(step.runs).toBe(0);
    body.close();
    const end = reader.read();
    expect(await settlesSoon(end)).toBe(false);
    expect(step.runs).toBe(1);
    step.finish();
    expect((await end).done).toBe(true);
    expect(step.runs).toBe(1);
  });

  it("a client that goes away mid-stream: the steps run once, also when the server then says the response is done", async () => {
    let responded!: () => void;
    const done = new Promise<void>((resolve) => (responded = resolve));
    const body = fedBody();
    const { step, answer } = run(() => make(body.stream), { responded: done });
    const reader = bodyChunks(await answer)!;
    body.push("data: 1\n\n");
    await reader.read();
    await reader.cancel();
    expect(step.runs).toBe(1);
    responded();
    await done;
    step.finish();
    expect(step.runs).toBe(1);
  });
});

describe("ctx.beforeEnd on own bodies", () => {
  it("keeps an own body one, so the server can take its chunks without a web stream", async () => {
    for (const make of STREAMED.slice(2).map((kind) => kind.make)) {
      const body = fedBody();
      const { answer } = run(() => make(body.stream));
      expect(await answer).toBeInstanceOf(OwnBodyResponse);
      body.close();
    }
  });
});
