/**
 * The console's files as a gateway process serves them (Node, or Deno when the suite runs on
 * Deno): the page under a strict CSP with a tab per panel, the stylesheet and the one script
 * (the client and every panel), never cached; `console.enabled: false` serves none.
 * The page in a browser: console-browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";

const services = `
services:
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: http://127.0.0.1:9
    operations: { chat: [/v1/chat/completions] }
`;

describe("the console's files", () => {
  let gw: GatewayProcess;
  let off: GatewayProcess;
  beforeAll(async () => {
    [gw, off] = await Promise.all([startGateway(services), startGateway(`console:\n  enabled: false\n${services}`)]);
  });
  afterAll(async () => {
    await Promise.all([gw?.kill(), off?.kill()]);
  });

  it("serves the page and every file it loads, offline and under a strict CSP", async () => {
    const page = await fetch(`${gw.url}/-/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("cache-control")).toBe("no-store");
    const html = await page.text();
    const files = [...html.matchAll(/(?:src|href)="(console\/[^"]+)"/g)].map((m) => m[1]);
    expect(files.sort()).toEqual(["console/app.css", "console/app.js"]);
    for (const tab of ["usage", "queues", "webhooks", "backends", "config"]) expect(html).toContain(`data-tab="${tab}"`);
    expect(html).not.toMatch(/https?:\/\//);
    for (const file of files) {
      const response = await fetch(`${gw.url}/-/${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get("content-type"), file).toMatch(file.endsWith(".css") ? /^text\/css/ : /^text\/javascript/);
      expect(await response.text(), file).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
    // The client, then every panel registering itself.
    const script = await (await fetch(`${gw.url}/-/console/app.js`)).text();
    for (const id of ["usage", "queues", "webhooks", "backends", "config"]) expect(script).toContain(`gatewayConsole.panel({\n  id: "${id}"`);
  });

  it("serves nothing with console.enabled: false", async () => {
    for (const path of ["/-/console", "/-/console/app.js"]) expect((await fetch(`${off.url}${path}`)).status, path).toBe(404);
  });
});
