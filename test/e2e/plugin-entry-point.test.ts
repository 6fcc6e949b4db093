/**
 * A plugin written outside the repository, as a plugin author writes one: its own folder in
 * the temp dir (not under the project), the gateway installed as its dependency
 * (node_modules/inference-gateway -> this repo, as `npm install <path>` links it), importing
 * nothing but the public entry point "inference-gateway/plugin", with its own config
 * section and a per-service field, loaded through `plugins.load` by the real gateway process (Node, or Deno when the
 * suite runs on Deno).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { exitCode, type GatewayProcess, onDeno, repoRoot, startGateway } from "../support/gateway-process.ts";

const GREETER = `
import { definePlugin, errors, Type } from "inference-gateway/plugin";

export default definePlugin({
  name: "greeter",
  section: {
    key: "greeter",
    schema: Type.Object({ greeting: Type.String({ default: "hello" }) }, { additionalProperties: false }),
  },
  // A field of its own on every services[] entry, validated with the rest of the file.
  serviceFields: { schema: Type.Object({ greeter_title: Type.String({ default: "" }) }) },
  setup(api) {
    const greeting: string = api.section.greeting;
    api.routes.get("/greet", (c) => c.json({ greeting }));
    api.routes.get("/greet/services", (c) =>
      c.json(api.config.services.map((service) => ({ model: service.model, title: (service as unknown as { greeter_title: string }).greeter_title }))),
    );
    api.routes.get("/greet/refused", () => {
      throw errors.forbidden("the greeter refuses; ask for /greet");
    });
  },
});
`;

const running: GatewayProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A plugin package in a fresh temp dir: `files` written, the gateway linked as its dependency. */
function pluginPackage(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "gw-plugin-"));
  dirs.push(dir);
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repoRoot, join(dir, "node_modules", "inference-gateway"), "dir");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const config = (pluginPath: string, section = "", services = "services: []") => `
plugins:
  load: [${JSON.stringify(pluginPath)}]
${section}
${services}
`;

describe("a plugin outside the repository, importing only inference-gateway/plugin", () => {
  it("loads through plugins.load, reads its own section, and its routes answer", async () => {
    const dir = pluginPackage({ "package.json": '{"name":"greeter","type":"module"}\n', "greeter.ts": GREETER });
    const gw = await startGateway(config(join(dir, "greeter.ts"), "greeter:\n  greeting: hi from outside\n"));
    running.push(gw);

    const answer = await fetch(`${gw.url}/greet`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ greeting: "hi from outside" });

    // The plugin's GatewayError is the gateway's own class: answered as such, not logged as a crash.
    const refused = await fetch(`${gw.url}/greet/refused`);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: { message: "the greeter refuses; ask for /greet", type: "permission_error", code: "forbidden" } });
    expect(gw.output()).not.toContain("route_failed");
  });

  it("its section is validated with the rest of the file", async () => {
    const dir = pluginPackage({ "package.json": '{"name":"greeter","type":"module"}\n', "greeter.ts": GREETER });
    const gw = await startGateway(config(join(dir, "greeter.ts"), "greeter:\n  greting: hi\n"), { noWait: true });
    running.push(gw);
    expect(await exitCode(gw)).toBe(1);
    expect(gw.output()).toContain("greeter.greting: unknown key");
  });

  it("adds a field to every service, with its default, and refuses a misspelt one with its path", async () => {
    const dir = pluginPackage({ "package.json": '{"name":"greeter","type":"module"}\n', "greeter.ts": GREETER });
    const services = `services:
  - { type: asr, model: titled, greeter_title: Dr }
  - { type: asr, model: plain }`;
    const gw = await startGateway(config(join(dir, "greeter.ts"), "", services));
    running.push(gw);
    expect(await (await fetch(`${gw.url}/greet/services`)).json()).toEqual([
      { model: "titled", title: "Dr" },
      { model: "plain", title: "" },
    ]);

    const misspelt = await startGateway(config(join(dir, "greeter.ts"), "", "services:\n  - { type: asr, model: m, greeter_titel: Dr }"), { noWait: true });
    running.push(misspelt);
    expect(await exitCode(misspelt)).toBe(1);
    expect(misspelt.output()).toContain('services[0].greeter_titel: unknown key; did you mean "greeter_title"?');
  });

  it("the example request mode (examples/echo-mode.ts, copied out of the repo) answers its services' path through the pipeline", async () => {
    const example = readFileSync(join(repoRoot, "examples/echo-mode.ts"), "utf8");
    const dir = pluginPackage({ "package.json": '{"name":"echo-mode","type":"module"}\n', "echo-mode.ts": example });
    const services = `server: { consumer_header: X-Consumer }
services:
  - { type: echo, model: parrot, echo: true, operations: { say: [/v1/echo] } }`;
    const gw = await startGateway(config(join(dir, "echo-mode.ts"), 'echo:\n  prefix: "you said: "\n', services));
    running.push(gw);

    const say = (body: string) => fetch(`${gw.url}/v1/echo`, { method: "POST", headers: { "content-type": "application/json", "x-consumer": "team-a" }, body });
    const answer = await say('{"input": "hello"}');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ model: "parrot", output: "you said: hello", consumer: "team-a" });

    const refused = await say('{"text": "hello"}');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: { message: 'send a JSON body with a string "input", e.g. {"input": "hello"}', type: "invalid_request_error", code: "invalid_request" },
    });

    // Counted as the sync requests it served, after the pipeline resolved the service.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/svc_gateway_requests_total\{status="200",mode="sync",service_type="echo"\} 1\n/);
    expect(metrics).toMatch(/svc_gateway_requests_total\{status="400",mode="sync",service_type="echo"\} 1\n/);
  });

  it.skipIf(onDeno)("on Node, a .ts plugin that would load as CommonJS is refused with what to change", async () => {
    const dir = pluginPackage({ "greeter.ts": GREETER });
    const path = join(dir, "greeter.ts");
    const gw = await startGateway(config(path), { noWait: true });
    running.push(gw);
    expect(await exitCode(gw)).toBe(1);
    const output = gw.output();
    expect(output).toContain(`plugins.load[0]: cannot import "${path}": Node would load it as CommonJS`);
    expect(output).toContain(`add "type": "module" to a package.json next to it (${join(dir, "package.json")}), or rename it to greeter.mts`);
    expect(output).not.toContain("must export default");
  });

  it.skipIf(onDeno)("on Node, the same file named .mts loads without a package.json", async () => {
    const dir = pluginPackage({ "greeter.mts": GREETER });
    const gw = await startGateway(config(join(dir, "greeter.mts"), "greeter:\n  greeting: hi\n"));
    running.push(gw);
    expect(await (await fetch(`${gw.url}/greet`)).json()).toEqual({ greeting: "hi" });
  });

  it.runIf(onDeno)("on Deno, a .ts plugin without a package.json loads (Deno runs every .ts file as an ES module)", async () => {
    const dir = pluginPackage({ "greeter.ts": GREETER });
    const gw = await startGateway(config(join(dir, "greeter.ts"), "greeter:\n  greeting: hi\n"));
    running.push(gw);
    expect(await (await fetch(`${gw.url}/greet`)).json()).toEqual({ greeting: "hi" });
  });
});
