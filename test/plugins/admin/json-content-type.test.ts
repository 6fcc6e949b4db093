/**
 * Admin routes read a JSON body only when it is sent as `Content-Type: application/json`: a
 * page on another site can make a browser send `text/plain`, a URL-encoded form or multipart
 * without asking, so those get a 415 saying what to send. Routes that take no body answer as
 * before whatever the type. The walk covers the route table of a gateway with every built-in
 * plugin, so a new admin route that reads JSON is in it.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Gateway } from "../../../core/gateway.ts";
import { adminRoutes, closeGateways, everything, gateway, send } from "./harness.ts";

afterEach(closeGateways);

const AUTH = { authorization: "Bearer t0ken" };

interface ErrorBody {
  error: { message: string; type: string };
}

/** A fresh key for each route that names one: a walk that revoked one key must not change the next answer. */
async function newKeyId(gw: Gateway): Promise<string> {
  const created = await send(gw, "POST", "/-/keys", AUTH, JSON.stringify({ consumer: "team-a" }));
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

/** The routes that read a JSON body, each with a body it accepts. */
const READS_JSON: Record<string, unknown> = {
  "POST /-/keys": { consumer: "team-b" },
  "PATCH /-/keys/x": { enabled: false },
  "POST /-/keys/x/rotate": { grace_period: "0s" },
  "POST /-/jobs/purge": { model: "reader" },
  "POST /-/relay/deadletter/discard": { model: "reader" },
  "POST /-/webhooks/deadletter/redeliver": {},
};

async function walk(gw: Gateway, headers: Record<string, string>): Promise<Map<string, Response>> {
  const answers = new Map<string, Response>();
  for (const { method, path } of adminRoutes(gw)) {
    const target = path.includes("/-/keys/x") ? path.replace("/-/keys/x", `/-/keys/${await newKeyId(gw)}`) : path;
    const body = JSON.stringify(READS_JSON[`${method} ${path}`] ?? {});
    answers.set(`${method} ${path}`, await send(gw, method, target, { ...AUTH, ...headers }, body));
  }
  return answers;
}

describe("the content type of an admin route's JSON body", () => {
  it("every route that reads a JSON body answers 415 for any other type, saying what to send; the others answer as before", async () => {
    const gw = await gateway(everything("admin: { token: t0ken }"));
    for (
      const contentType of [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/merge-patch+json",
      ]
    ) {
      const answers = await walk(gw, { "content-type": contentType });
      const unsupported: string[] = [];
      for (const [route, response] of answers) {
        if (response.status !== 415) {
          await response.body?.cancel();
          continue;
        }
        unsupported.push(route);
        const error = ((await response.json()) as ErrorBody).error;
        expect(error.type).toBe("invalid_request_error");
        expect(error.message).toContain(
          `admin endpoints take JSON only as Content-Type: application/json (got Content-Type: ${JSON.stringify(contentType)}); send a JSON body`,
        );
      }
      expect(unsupported.sort(), contentType).toEqual(Object.keys(READS_JSON).sort());
    }
    const purge = await gw.fetch(new Request("http://gateway/-/jobs/purge", { method: "POST", headers: AUTH, body: new Blob(['{"model":"reader"}']) }));
    expect(purge.headers.get("content-type")).toBe("application/json");
    expect(await purge.json()).toEqual({
      error: {
        type: "invalid_request_error",
        code: "unsupported_media_type",
        message:
          `admin endpoints take JSON only as Content-Type: application/json (got no Content-Type); send a JSON body {"model": "<model alias>"} with that header (curl: -H 'content-type: application/json')`,
      },
    });
  });

  it("application/json with parameters or in capitals is read as before", async () => {
    const gw = await gateway(everything("admin: { token: t0ken }"));
    for (const contentType of ["application/json", "application/json; charset=utf-8", "Application/JSON"]) {
      const answers = await walk(gw, { "content-type": contentType });
      for (const route of Object.keys(READS_JSON)) {
        const response = answers.get(route);
        expect(response?.status, `${route} as ${contentType}: ${await response?.clone().text()}`).toBeLessThan(300);
      }
      for (const response of answers.values()) await response.body?.cancel();
    }
  });

  it("a route whose body is optional still takes none, with no content type", async () => {
    const gw = await gateway(everything("admin: { token: t0ken }"));
    const rotated = await gw.fetch(new Request(`http://gateway/-/keys/${await newKeyId(gw)}/rotate`, { method: "POST", headers: AUTH }));
    expect(rotated.status).toBe(200);
    const redelivered = await gw.fetch(
      new Request("http://gateway/-/webhooks/deadletter/redeliver", { method: "POST", headers: { ...AUTH, "content-length": "0" } }),
    );
    expect(await redelivered.json()).toEqual({ redelivered: 0, skipped: [] });
    // A route that takes no body answers whatever comes with it.
    expect((await send(gw, "POST", "/-/reload", { ...AUTH, "content-type": "text/plain" }, "anything")).status).toBe(200);
  });
});
