/**
 * Identity headers as sent (docs/design.md#authentication and
 * docs/design.md#consumers-and-ownership): a blank consumer header is present, not absent, so it
 * never gets the admin bypass of job ownership; an identity header sent twice is refused rather
 * than read joined. The real gateway process (Node, or Deno when the suite runs on Deno) on the
 * memory store and on Redis + S3, with hand-written HTTP where a header must be sent twice or with
 * nothing but spaces in it (fetch trims values and joins repeats). Only spaces and tabs around a
 * value are dropped: a non-breaking space is part of the name.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccessBackend, startAccessBackend } from "../fixtures/access-backend.ts";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";
import { rawRequest, type RawResponse } from "../support/raw-http.ts";
import { storesYaml } from "../support/stores-yaml.ts";

interface ErrorBody {
  error: { message: string; type: string };
}

let backend: AccessBackend;
beforeAll(async () => {
  backend = await startAccessBackend();
});
afterAll(async () => {
  await backend?.close();
});

const STORES = {
  memory: () => `object_store:\n  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-identity-")))}`,
  redis: () => storesYaml({ bucket: "identity-headers-e2e" }),
};

/** Proxy mode with every identity header named; role `admin` alone grants `id-admin`. No relay: jobs stay pending. */
const config = (stores: string) =>
  `${stores}
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
  priority_header: X-Priority
auth:
  mode: proxy
  proxy:
    groups_header: X-Groups
    roles_header: X-Roles
    scopes_header: X-Scopes
policies:
  default: deny
  rules:
    - match: {}
      allow_models: [id-public, id-job]
    - match: { roles: [admin] }
      allow_models: [id-admin]
relay:
  embedded: false
services:
  - type: id-chat
    model: id-public
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    inference_url: ${backend.url}
  - type: id-chat
    model: id-admin
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    inference_url: ${backend.url}
  - type: id-jobs
    model: id-job
    default: true
    operations: { run: [/run] }
    inference_url: ${backend.url}
`;

/** A consumer name no other test (nor an earlier run on the shared Redis) uses. */
const someone = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;

async function submitJob(gw: GatewayProcess, headers: Record<string, string>): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob(["input"], { type: "text/plain" }), "input.txt");
  return await fetch(`${gw.url}/jobs/id-jobs`, { method: "POST", headers, body: form });
}

async function chat(gw: GatewayProcess, model: string, headers: Record<string, string>): Promise<Response> {
  return await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
}

/** A raw request with `headers` as written: repeats and blank values reach the gateway as they are. */
async function raw(gw: GatewayProcess, method: string, path: string, headers: string[], body = ""): Promise<RawResponse> {
  const type = body === "" ? [] : ["Content-Type: application/json"];
  return await rawRequest(gw.port, [`${method} ${path} HTTP/1.1`, `Host: 127.0.0.1:${gw.port}`, "Connection: close", ...type, ...headers].join("\n"), body);
}

function errorIn(response: RawResponse): ErrorBody["error"] {
  return (JSON.parse(response.text.slice(response.text.indexOf("\r\n\r\n") + 4)) as ErrorBody).error;
}

const chatBody = (model: string) => JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] });

describe.each(Object.keys(STORES) as Array<keyof typeof STORES>)("a blank consumer header (%s store)", (store) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config(STORES[store]()));
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("reads and cancels no job: GET and DELETE /jobs/{type}/{id} answer 404, and the job stays pending", async () => {
    const ann = someone("ann");
    const submitted = await submitJob(gw, { "x-consumer": ann });
    expect(submitted.status).toBe(202);
    const { job_id: id } = (await submitted.json()) as { job_id: string };
    const notFound = { message: `job "${id}" of service type "id-jobs" not found`, type: "not_found_error", code: "job_not_found" };

    for (const blank of ["X-Consumer:", "X-Consumer:    "]) {
      for (const method of ["GET", "DELETE"]) {
        const answer = await raw(gw, method, `/jobs/id-jobs/${id}`, [blank]);
        expect([method, blank, answer.status]).toEqual([method, blank, 404]);
        expect(errorIn(answer)).toEqual(notFound);
      }
    }
    const viaFetch = await fetch(`${gw.url}/jobs/id-jobs/${id}`, { method: "DELETE", headers: { "x-consumer": "" } });
    expect(viaFetch.status).toBe(404);
    await viaFetch.body?.cancel();

    // Not cancelled: its owner still sees it pending, and so does a request with no header (the bypass).
    const owner = await fetch(`${gw.url}/jobs/id-jobs/${id}`, { headers: { "x-consumer": ann } });
    expect(await owner.json()).toMatchObject({ id, status: "pending", consumer_name: ann });
    const admin = await fetch(`${gw.url}/jobs/id-jobs/${id}`);
    expect(await admin.json()).toMatchObject({ id, status: "pending" });
  });

  it("is refused with 400 naming the header on every other request that reads identity, and so is a blank user type", async () => {
    const ann = someone("ann");
    expect((await submitJob(gw, { "x-consumer": ann })).status).toBe(202);
    const before = backend.paths.length;
    const blankConsumer = {
      message: "the X-Consumer header is empty: send a consumer name or leave the header out",
      type: "invalid_request_error",
      code: "invalid_request",
    };
    const blankUserType = {
      message: "the X-User-Type header is empty: send a user type or leave the header out",
      type: "invalid_request_error",
      code: "invalid_request",
    };
    const calls: Array<[string, () => Promise<Response>, ErrorBody["error"]]> = [
      ["submit", () => submitJob(gw, { "x-consumer": "" }), blankConsumer],
      ["list", () => fetch(`${gw.url}/jobs`, { headers: { "x-consumer": "" } }), blankConsumer],
      ["usage", () => fetch(`${gw.url}/usage`, { headers: { "x-consumer": "" } }), blankConsumer],
      ["chat", () => chat(gw, "id-public", { "x-consumer": "" }), blankConsumer],
      ["models", () => fetch(`${gw.url}/v1/models`, { headers: { "x-consumer": "" } }), blankConsumer],
      ["chat, user type", () => chat(gw, "id-public", { "x-consumer": ann, "x-user-type": "" }), blankUserType],
      ["submit, user type", () => submitJob(gw, { "x-consumer": ann, "x-user-type": "" }), blankUserType],
    ];
    for (const [name, call, expected] of calls) {
      const response = await call();
      expect([name, response.status]).toEqual([name, 400]);
      expect(((await response.json()) as ErrorBody).error).toEqual(expected);
    }
    const spaces = await raw(gw, "POST", "/v1/chat/completions", ["X-Consumer:    "], chatBody("id-public"));
    expect(spaces.status).toBe(400);
    expect(errorIn(spaces)).toEqual(blankConsumer);
    // Nothing reached the backend and no job was created.
    expect(backend.paths.length).toBe(before);
    const jobs = (await (await fetch(`${gw.url}/jobs`, { headers: { "x-consumer": ann } })).json()) as { total: number };
    expect(jobs.total).toBe(1);
  });
});

describe.each(Object.keys(STORES) as Array<keyof typeof STORES>)("spaces around the consumer header's value (%s store)", (store) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config(STORES[store]()));
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("drops only spaces and tabs: a non-breaking space is part of the name, so it names another consumer", async () => {
    const ann = someone("ann");
    const submitted = await submitJob(gw, { "x-consumer": ann });
    const { job_id: id } = (await submitted.json()) as { job_id: string };
    // Spaces and tabs around the value are HTTP's optional whitespace: the same consumer.
    const padded = await raw(gw, "GET", `/jobs/id-jobs/${id}`, [`X-Consumer: \t ${ann} \t`]);
    expect(padded.status).toBe(200);
    // A non-breaking space (the byte 0xA0) is not: another consumer, who cannot see ann's job.
    for (const other of [`${ann}\u00a0`, `\u00a0${ann}`]) {
      const read = await fetch(`${gw.url}/jobs/id-jobs/${id}`, { headers: { "x-consumer": other } });
      expect([JSON.stringify(other), read.status]).toEqual([JSON.stringify(other), 404]);
      await read.body?.cancel();
    }
    // A job submitted under that name is recorded under it, and read only with it.
    const nbsp = `${ann}\u00a0`;
    const theirs = (await (await submitJob(gw, { "x-consumer": nbsp })).json()) as { job_id: string };
    const record = await fetch(`${gw.url}/jobs/id-jobs/${theirs.job_id}`, { headers: { "x-consumer": nbsp } });
    expect(await record.json()).toMatchObject({ id: theirs.job_id, consumer_name: nbsp });
    expect((await fetch(`${gw.url}/jobs/id-jobs/${theirs.job_id}`, { headers: { "x-consumer": ann } })).status).toBe(404);
  });
});

describe("an identity header sent twice", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config(STORES.redis()));
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("is refused with 400 naming the header, so a client's copy never adds a role to the proxy's", async () => {
    const before = backend.paths.length;
    const twice = await raw(gw, "POST", "/v1/chat/completions", ["X-Roles: user", "x-roles: admin"], chatBody("id-admin"));
    expect(twice.status).toBe(400);
    expect(errorIn(twice)).toEqual({
      message: "the X-Roles header was sent 2 times; send it once (a proxy in front of the gateway must replace the client's X-Roles header, not add another)",
      type: "invalid_request_error",
      code: "invalid_request",
    });
    expect(backend.paths.length).toBe(before);
    // Sent once, the role counts, and so does a list in one header line.
    expect((await raw(gw, "POST", "/v1/chat/completions", ["X-Roles: admin"], chatBody("id-admin"))).status).toBe(200);
    expect((await raw(gw, "POST", "/v1/chat/completions", ["X-Roles: user, admin"], chatBody("id-admin"))).status).toBe(200);
    expect((await raw(gw, "POST", "/v1/chat/completions", ["X-Roles: user"], chatBody("id-admin"))).status).toBe(403);
  });

  it("is refused for each identity header the config names, on every route that reads identity", async () => {
    const ann = someone("ann");
    const cases: Array<[string, string[]]> = [
      ["X-Consumer", [`X-Consumer: ${ann}`, "x-consumer: bob"]],
      ["X-User-Type", ["X-User-Type: free", "X-USER-TYPE: pro"]],
      ["X-Priority", ["X-Priority: 1", "x-priority: 1"]],
      ["X-Groups", ["X-Groups: a", "X-Groups: b"]],
      ["X-Scopes", ["x-scopes: read", "X-Scopes: write"]],
    ];
    for (const [header, lines] of cases) {
      const answer = await raw(gw, "POST", "/v1/chat/completions", lines, chatBody("id-public"));
      expect([header, answer.status]).toEqual([header, 400]);
      expect(errorIn(answer).message).toMatch(new RegExp(`^the ${header} header was sent 2 times; send it once`));
    }
    // Job ownership: the owner's name sent twice reads nothing.
    const submitted = await submitJob(gw, { "x-consumer": ann });
    const { job_id: id } = (await submitted.json()) as { job_id: string };
    const read = await raw(gw, "GET", `/jobs/id-jobs/${id}`, [`X-Consumer: ${ann}`, `X-Consumer: ${ann}`]);
    expect(read.status).toBe(400);
    expect(errorIn(read).message).toMatch(/^the X-Consumer header was sent 2 times/);
    expect((await raw(gw, "GET", `/jobs/id-jobs/${id}`, [`X-Consumer: ${ann}`])).status).toBe(200);
  });
});
