/**
 * The Files API of the batch plugin (`/v1/files`), on the memory store and on Redis: an upload
 * answers the File object and its bytes come back as sent; a purpose other than `batch` and a
 * file past `batches.max_file_size_mb` are refused and leave nothing behind; another consumer
 * gets 404; lists are newest first and page with `after`; delete removes the record and the
 * bytes; retention deletes both (the clock is driven past it), and a sweep that stopped before
 * it deleted a file's bytes leaves them to a later sweep.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { SWEEP_LEASE_MS } from "../../../plugins/batches/files/store.ts";
import { type BatchRuntime, batchRuntime, fileForm, ownRedis, STORES } from "./harness.ts";

const CONFIG = `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
  max_file_size_mb: 0.001
  retention: 2d
services: []
`;

const redisUrl = ownRedis();

async function objectKeys(gw: BatchRuntime): Promise<string[]> {
  const keys: string[] = [];
  for await (const info of gw.objects.list("batches/")) keys.push(info.key);
  return keys;
}

describe.each(STORES)("files on the %s store", (store) => {
  let gw: BatchRuntime;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  afterEach(async () => {
    await gw?.close();
  });
  const start = async () => {
    gw = await batchRuntime(CONFIG, { store, redisUrl, clock });
    return gw;
  };
  const as = (consumer: string, init: RequestInit = {}): RequestInit => ({
    ...init,
    headers: { "x-consumer": consumer, ...(init.headers as Record<string, string> | undefined) },
  });

  it("stores an upload, answers the File object and gives the bytes back", async () => {
    await start();
    const content = '{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n';
    const created = await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm(content) }));
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      object: "file",
      bytes: content.length,
      filename: "input.jsonl",
      purpose: "batch",
      created_at: Math.floor(clock.now() / 1000),
    });
    const id = created.body.id as string;
    expect(id).toMatch(/^file-/);

    const got = await gw.json(`/v1/files/${id}`, as("alice"));
    expect(got).toEqual({ status: 200, body: created.body });
    const content2 = await gw.request(`/v1/files/${id}/content`, as("alice"));
    expect(content2.status).toBe(200);
    expect(await content2.text()).toBe(content);

    // The purpose may come after the file part too (the openai client sends it that way).
    const late = await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm(content, "batch", "late.jsonl", false) }));
    expect(late.status).toBe(200);
    expect(late.body.filename).toBe("late.jsonl");
  });

  it("refuses a purpose other than batch, before or after the file, and keeps nothing", async () => {
    await start();
    for (const purposeFirst of [true, false]) {
      const refused = await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm("{}\n", "fine-tune", "x.jsonl", purposeFirst) }));
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({
        error: { message: expect.stringContaining('purpose "fine-tune"'), type: "invalid_request_error", code: "invalid_request" },
      });
      expect((refused.body.error as { message: string }).message).toContain('"batch"');
    }
    const missing = await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm("{}\n", null) }));
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toContain('no \\"purpose\\" field');
    expect(await objectKeys(gw)).toEqual([]);
    expect((await gw.json("/v1/files", as("alice"))).body.data).toEqual([]);
  });

  it("answers 413 past batches.max_file_size_mb and keeps nothing", async () => {
    await start();
    const big = "x".repeat(2000);
    const refused = await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm(big) }));
    expect(refused.status).toBe(413);
    expect((refused.body.error as { message: string }).message).toContain("batches.max_file_size_mb");
    expect(await objectKeys(gw)).toEqual([]);
  });

  it("hides a file from another consumer (404 on every route) and lists only the caller's", async () => {
    await start();
    const created = await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm("{}\n") }));
    const id = created.body.id as string;
    for (const [method, path] of [["GET", `/v1/files/${id}`], ["GET", `/v1/files/${id}/content`], ["DELETE", `/v1/files/${id}`]] as const) {
      const other = await gw.json(path, as("bob", { method }));
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ error: { message: expect.stringContaining(id), type: "not_found_error", code: "not_found" } });
    }
    expect((await gw.json("/v1/files", as("bob"))).body).toEqual({ object: "list", data: [], has_more: false, first_id: null, last_id: null });
    expect(((await gw.json("/v1/files", as("alice"))).body.data as unknown[]).length).toBe(1);
  });

  it("lists newest first and pages with after and limit", async () => {
    await start();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      ids.push((await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm(`{"n":${i}}\n`) }))).body.id as string);
    }
    const newestFirst = [...ids].reverse();
    const first = await gw.json("/v1/files?limit=2", as("alice"));
    expect((first.body.data as Array<{ id: string }>).map((f) => f.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.has_more).toBe(true);
    const second = await gw.json(`/v1/files?limit=2&after=${newestFirst[1]}`, as("alice"));
    expect((second.body.data as Array<{ id: string }>).map((f) => f.id)).toEqual(newestFirst.slice(2, 4));
    // A cursor whose file was deleted still says where the page starts.
    expect((await gw.json(`/v1/files/${newestFirst[3]}`, as("alice", { method: "DELETE" }))).body).toEqual({
      id: newestFirst[3],
      object: "file",
      deleted: true,
    });
    const third = await gw.json(`/v1/files?limit=2&after=${newestFirst[3]}`, as("alice"));
    expect((third.body.data as Array<{ id: string }>).map((f) => f.id)).toEqual([newestFirst[4]]);
    expect(third.body.has_more).toBe(false);
    expect((await gw.json("/v1/files?limit=0", as("alice"))).status).toBe(400);
    expect((await gw.json("/v1/files?after=nope", as("alice"))).status).toBe(400);
    expect(((await gw.json("/v1/files?purpose=batch_output", as("alice"))).body.data as unknown[]).length).toBe(0);
  });

  it("delete removes the record and the bytes; retention deletes both", async () => {
    await start();
    const kept = (await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm("{}\n") }))).body.id as string;
    const deleted = (await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm("{}\n") }))).body.id as string;
    expect((await gw.json(`/v1/files/${deleted}`, as("alice", { method: "DELETE" }))).status).toBe(200);
    expect((await gw.json(`/v1/files/${deleted}`, as("alice"))).status).toBe(404);
    expect(await objectKeys(gw)).toEqual([`batches/files/${kept}`]);

    clock.advance(47 * 3_600_000);
    await gw.runtime.runTaskNow("batches.files");
    expect((await gw.json(`/v1/files/${kept}`, as("alice"))).status).toBe(200);
    clock.advance(2 * 3_600_000);
    await gw.runtime.runTaskNow("batches.files");
    expect(await objectKeys(gw)).toEqual([]);
    expect((await gw.json(`/v1/files/${kept}`, as("alice"))).status).toBe(404);
  });

  it("a sweep that stops before it deleted a file's bytes leaves them to a sweep after its lease", async () => {
    // The first deletion of bytes fails, as a process that dies there: the sweep stops.
    let failures = 1;
    gw = await batchRuntime(CONFIG, {
      store,
      redisUrl,
      clock,
      objects: (files) =>
        new Proxy(files, {
          get(target, name) {
            if (name === "delete" && failures > 0) {
              return () => {
                failures--;
                return Promise.reject(new Error("the process stopped here"));
              };
            }
            const value: unknown = Reflect.get(target, name);
            return typeof value === "function" ? value.bind(target) : value;
          },
        }),
    });
    const id = (await gw.json("/v1/files", as("alice", { method: "POST", body: fileForm("{}\n") }))).body.id as string;
    clock.advance(49 * 3_600_000);
    await gw.runtime.runTaskNow("batches.files");
    expect(failures).toBe(0);
    expect(await objectKeys(gw)).toEqual([`batches/files/${id}`]);
    // Held by the stopped sweep until its lease ends, then deleted by the next.
    await gw.runtime.runTaskNow("batches.files");
    expect(await objectKeys(gw)).toEqual([`batches/files/${id}`]);
    clock.advance(SWEEP_LEASE_MS);
    await gw.runtime.runTaskNow("batches.files");
    expect(await objectKeys(gw)).toEqual([]);
  });
});
