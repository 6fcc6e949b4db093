/**
 * The console's files as a gateway process serves them (Node, or Deno when the suite runs on
 * Deno): the page under a strict CSP, the client, the stylesheet and every panel script the
 * page names, never cached; an unknown panel is a 404; `console.enabled: false` serves none.
 * The page in a browser: console-browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayProcess } from "../support/gateway-process.ts";

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
    expect(files).toEqual(expect.arrayContaining(["console/app.css", "console/app.js", "console/panels/usage.js", "console/panels/queues.js", "console/panels/webhooks.js", "console/panels/backends.js", "console/panels/config.js"]));
    expect(html).not.toMatch(/https?:\/\//);
    for (const file of files) {
      const response = await fetch(`${gw.url}/-/${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get("content-type"), file).toMatch(file.endsWith(".css") ? /^text\/css/ : /^text\/javascript/);
      expect(await response.text(), file).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
    const unknown = await fetch(`${gw.url}/-/console/panels/nope.js`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toBe('no console panel "nope.js"');
  });

  it("serves nothing with console.enabled: false", async () => {
    for (const path of ["/-/console", "/-/console/app.js"]) expect((await fetch(`${off.url}${path}`)).status, path).toBe(404);
  });
});
