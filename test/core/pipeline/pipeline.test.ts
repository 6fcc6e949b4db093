import { describe, expect, it } from "vitest";
import { errors, GatewayError } from "../../../core/errors.ts";
import { createLogger } from "../../../core/log.ts";
import { type RequestContext, RequestState } from "../../../core/pipeline/context.ts";
import { type ModeHandlers, Pipeline, STAGES, type StepStage } from "../../../core/pipeline/pipeline.ts";

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, lines };
}

function newContext(path = "/v1/chat/completions"): RequestState {
  return new RequestState(new Request(`http://gateway.test${path}`, { method: "POST" }), "sync", "llm", 0);
}

function mode(handle: ModeHandlers["handle"], resolve: ModeHandlers["resolve"] = () => undefined): ModeHandlers {
  return { resolve, handle };
}

/** A response body the test feeds chunk by chunk, recording whether it was cancelled. */
function controlledBody() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const state = { cancelled: false as boolean, reason: undefined as unknown };
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel(reason) {
      state.cancelled = true;
      state.reason = reason;
    },
  });
  const encoder = new TextEncoder();
  return {
    stream,
    state,
    push: (text: string) => controller.enqueue(encoder.encode(text)),
    end: () => controller.close(),
  };
}

/** A promise with its resolver, to await a finalizer instead of sleeping. */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("Pipeline stage order", () => {
  it("runs identify, admit, resolve, visibility, policy, limits, then the handler", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    // Added in scrambled order: the core owns the order, not the registration order.
    const stages: StepStage[] = ["limits", "policy", "identify", "visibility", "admit"];
    for (const stage of stages) pipeline.add(stage, () => void calls.push(stage));
    pipeline.add("identify", () => void calls.push("identify#2"));
    const response = await pipeline.run(
      newContext(),
      mode(
        () => {
          calls.push("handler");
          return new Response("done");
        },
        () => void calls.push("resolve"),
      ),
    );
    expect(calls).toEqual(["identify", "identify#2", "admit", "resolve", "visibility", "policy", "limits", "handler"]);
    expect(STAGES).toEqual(["identify", "admit", "resolve", "visibility", "policy", "limits", "handler"]);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("done");
  });

  it("passes the same context to every step, so a step sees what an earlier one set", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("identify", (ctx) => {
      ctx.principal = { consumer: "alice", groups: ["ml"], roles: [], scopes: [], authenticated: true };
    });
    let seen: RequestContext | undefined;
    const response = await pipeline.run(
      newContext(),
      mode((ctx) => {
        seen = ctx;
        return new Response(ctx.principal.consumer ?? "anonymous");
      }),
    );
    expect(await response.text()).toBe("alice");
    expect(seen?.url.pathname).toBe("/v1/chat/completions");
  });

  it("refuses a step for a stage plugins cannot add to, naming the stages", () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    expect(() => pipeline.add("handler" as StepStage, () => undefined)).toThrow(
      'unknown pipeline stage "handler"; stages: identify, admit, visibility, policy, limits',
    );
  });
});

describe("Pipeline answers", () => {
  it("stops at the first step that answers with a Response", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("identify", () => void calls.push("identify"));
    pipeline.add("visibility", () => {
      calls.push("visibility");
      return new Response("hidden", { status: 404 });
    });
    pipeline.add("visibility", () => void calls.push("visibility#2"));
    pipeline.add("policy", () => void calls.push("policy"));
    pipeline.add("limits", () => void calls.push("limits"));
    const response = await pipeline.run(
      newContext(),
      mode(
        () => {
          calls.push("handler");
          return new Response("ok");
        },
        () => void calls.push("resolve"),
      ),
    );
    expect(calls).toEqual(["identify", "resolve", "visibility"]);
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("hidden");
  });

  it("stops when the mode's resolve answers", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("policy", () => void calls.push("policy"));
    const response = await pipeline.run(
      newContext(),
      mode(
        () => {
          calls.push("handler");
          return new Response("ok");
        },
        async () => new Response("too large", { status: 413 }),
      ),
    );
    expect(calls).toEqual([]);
    expect(response.status).toBe(413);
  });

  it("turns a thrown GatewayError into its status, headers and error body", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    const calls: string[] = [];
    pipeline.add("policy", () => {
      throw errors.forbidden('model "large" is not allowed for you');
    });
    pipeline.add("limits", () => void calls.push("limits"));
    const response = await pipeline.run(newContext(), mode(() => new Response("ok")));
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({ error: { message: 'model "large" is not allowed for you', type: "permission_error", code: "forbidden" } });
    expect(calls).toEqual([]);
  });

  it("keeps the headers of a thrown GatewayError (Retry-After on 429)", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("limits", async () => {
      throw errors.rateLimited("rate limit of 5 per 1m reached", 12.2);
    });
    const response = await pipeline.run(newContext(), mode(() => new Response("ok")));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("13");
    expect(await response.json()).toEqual({ error: { message: "rate limit of 5 per 1m reached", type: "rate_limit_error", code: "rate_limited" } });
  });

  it("turns an error thrown by the handler into a response", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    const response = await pipeline.run(
      newContext(),
      mode(async () => {
        throw new GatewayError(502, "backend_error", "backend answered garbage");
      }),
    );
    expect(response.status).toBe(502);
    expect(await response.json()).toEqual({ error: { message: "backend answered garbage", type: "backend_error", code: "backend_error" } });
  });

  it("turns an unknown error into a 500 with a generic message and logs the real one", async () => {
    const { log, lines } = capturingLogger();
    const pipeline = new Pipeline(log);
    pipeline.add("admit", () => {
      throw new Error("secret connection string redis://user:pw@host");
    });
    const response = await pipeline.run(newContext("/jobs/ocr"), mode(() => new Response("ok")));
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: { message: string; type: string; code: string } };
    expect(body).toEqual({ error: { message: "internal error; see the gateway log for details", type: "api_error", code: "internal_error" } });
    expect(JSON.stringify(body)).not.toContain("secret");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "error", event: "request_failed", path: "/jobs/ocr" });
    expect(JSON.stringify(lines[0])).toContain("secret connection string");
  });

  it("does not log an expected GatewayError", async () => {
    const { log, lines } = capturingLogger();
    const pipeline = new Pipeline(log);
    pipeline.add("identify", () => {
      throw errors.unauthorized("missing bearer token");
    });
    const response = await pipeline.run(newContext(), mode(() => new Response("ok")));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    expect(lines).toEqual([]);
  });

  it("a non-Error thrown value also becomes a 500", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    const response = await pipeline.run(
      newContext(),
      mode(() => {
        throw "plain string";
      }),
    );
    expect(response.status).toBe(500);
  });
});

describe("Pipeline response headers", () => {
  it("adds the context's response headers to the handler's response", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("limits", (ctx) => {
      ctx.responseHeaders.set("x-ratelimit-remaining", "4");
      ctx.responseHeaders.set("content-type", "text/plain+override");
    });
    const response = await pipeline.run(
      newContext(),
      mode(() => new Response('{"ok":true}', { status: 201, statusText: "Created", headers: { "content-type": "application/json", "x-backend": "b1" } })),
    );
    expect(response.status).toBe(201);
    expect(response.statusText).toBe("Created");
    expect(response.headers.get("x-ratelimit-remaining")).toBe("4");
    expect(response.headers.get("x-backend")).toBe("b1");
    expect(response.headers.get("content-type")).toBe("text/plain+override");
    expect(await response.text()).toBe('{"ok":true}');
  });

  it("adds them to error responses too", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("limits", (ctx) => {
      ctx.responseHeaders.set("x-ratelimit-limit", "5");
      throw errors.rateLimited("slow down", 1);
    });
    const response = await pipeline.run(newContext(), mode(() => new Response("ok")));
    expect(response.status).toBe(429);
    expect(response.headers.get("x-ratelimit-limit")).toBe("5");
    expect(response.headers.get("retry-after")).toBe("1");
  });

  it("adds them to a response a step answers with", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("admit", (ctx) => {
      ctx.responseHeaders.set("x-request-id", "r1");
      return new Response("nope", { status: 503 });
    });
    const response = await pipeline.run(newContext(), mode(() => new Response("ok")));
    expect(response.status).toBe(503);
    expect(response.headers.get("x-request-id")).toBe("r1");
  });
});

describe("Pipeline finalizers", () => {
  it("runs deferred finalizers only after the body has been fully read", async () => {
    const calls: string[] = [];
    const allDone = signal();
    const body = controlledBody();
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("limits", (ctx) => {
      ctx.defer(() => void calls.push("release slot"));
      ctx.defer(async () => {
        calls.push("record usage");
        allDone.resolve();
      });
    });
    const response = await pipeline.run(newContext(), mode(() => new Response(body.stream, { headers: { "content-type": "text/event-stream" } })));
    expect(calls).toEqual([]);

    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    body.push("data: 1\n\n");
    expect(decoder.decode((await reader.read()).value)).toBe("data: 1\n\n");
    expect(calls).toEqual([]);
    body.push("data: 2\n\n");
    expect(decoder.decode((await reader.read()).value)).toBe("data: 2\n\n");
    expect(calls).toEqual([]);

    body.end();
    expect((await reader.read()).done).toBe(true);
    await allDone.promise;
    expect(calls).toEqual(["release slot", "record usage"]);
  });

  it("runs finalizers when the client cancels the body, and cancels the source", async () => {
    const calls: string[] = [];
    const body = controlledBody();
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("limits", (ctx) => ctx.defer(() => void calls.push("release slot")));
    const response = await pipeline.run(newContext(), mode(() => new Response(body.stream)));
    const reader = response.body!.getReader();
    body.push("partial");
    await reader.read();
    expect(calls).toEqual([]);
    await reader.cancel("client went away");
    expect(calls).toEqual(["release slot"]);
    expect(body.state.cancelled).toBe(true);
    expect(body.state.reason).toBe("client went away");
  });

  it("runs finalizers once when the source stream fails, and the reader sees the error", async () => {
    const calls: string[] = [];
    let fail!: (error: Error) => void;
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        fail = (error) => controller.error(error);
      },
    });
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("limits", (ctx) => ctx.defer(() => void calls.push("release slot")));
    const response = await pipeline.run(newContext(), mode(() => new Response(source)));
    const reading = response.text();
    fail(new Error("backend reset"));
    await expect(reading).rejects.toThrow("backend reset");
    expect(calls).toEqual(["release slot"]);
  });

  it("runs finalizers for an error response, after its body is read", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("admit", (ctx) => ctx.defer(() => void calls.push("cleanup")));
    pipeline.add("policy", () => {
      throw errors.forbidden("denied");
    });
    const response = await pipeline.run(newContext(), mode(() => new Response("ok")));
    expect(response.status).toBe(403);
    expect(calls).toEqual([]);
    expect(await response.json()).toEqual({ error: { message: "denied", type: "permission_error", code: "forbidden" } });
    expect(calls).toEqual(["cleanup"]);
  });

  it("runs finalizers for an unknown error's 500 too", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    const response = await pipeline.run(
      newContext(),
      mode((ctx) => {
        ctx.defer(() => void calls.push("cleanup"));
        throw new TypeError("bug");
      }),
    );
    expect(response.status).toBe(500);
    await response.text();
    expect(calls).toEqual(["cleanup"]);
  });

  it("runs finalizers at once for a response without a body", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    pipeline.add("identify", (ctx) => ctx.defer(() => void calls.push("cleanup")));
    const response = await pipeline.run(newContext(), mode(() => new Response(null, { status: 204 })));
    expect(response.status).toBe(204);
    expect(calls).toEqual(["cleanup"]);
  });

  it("logs a failing finalizer and still runs the next ones", async () => {
    const { log, lines } = capturingLogger();
    const calls: string[] = [];
    const allDone = signal();
    const pipeline = new Pipeline(log);
    pipeline.add("identify", (ctx) => {
      ctx.defer(() => {
        throw new Error("finalizer broke");
      });
      ctx.defer(() => {
        calls.push("second");
        allDone.resolve();
      });
    });
    const response = await pipeline.run(newContext(), mode(() => new Response("body")));
    expect(await response.text()).toBe("body");
    await allDone.promise;
    expect(calls).toEqual(["second"]);
    expect(lines).toEqual([expect.objectContaining({ level: "error", event: "request_finalizer_failed" })]);
  });

  it("returns the handler's response untouched when there is nothing to add", async () => {
    const pipeline = new Pipeline(createLogger({ write: () => {} }));
    const original = new Response("same");
    const response = await pipeline.run(newContext(), mode(() => original));
    expect(response).toBe(original);
  });
});
