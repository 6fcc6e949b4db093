/**
 * Cross-site request forgery against `/-/*` in a real browser (headless Debian chromium via
 * playwright-core): a gateway process without `admin.token` (the spec's open `/-/*`) holds a
 * pending job; a page served from another origin makes the browser send what such a page can
 * send without asking the gateway first (a `text/plain` fetch in `no-cors` mode, a form posted
 * as `text/plain`) to purge the job's model and reload the config. Every one of those answers
 * 403 and the job is still there. A link on that page to the console opens it, and the console
 * (now on the gateway's own origin) calls the admin API as before, a reload included. Node only; skipped, saying
 * so, without /usr/bin/chromium.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, onDeno, startGateway, waitUntil } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";

const CHROMIUM = "/usr/bin/chromium";
const skipReason = onDeno ? "runs on Node only" : existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
if (skipReason) console.warn(`admin cross-site browser test skipped: ${skipReason}`);

const config = () => `
server:
  consumer_header: X-Consumer
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-e2e-csrf-")))}
relay:
  embedded: false
services:
  - type: transcription
    model: whisper
    inference_url: http://127.0.0.1:9
    operations: { transcribe: [/v1/audio/transcriptions] }
`;

/** The other site's page: what it sends to the gateway, without asking it first. */
const attackerPage = (gateway: string) =>
  `<!doctype html>
<html><body>
<a id="console" href="${gateway}/-/console">the gateway's console</a>
<iframe name="sink" style="display:none"></iframe>
<form id="reload" method="post" enctype="text/plain" action="${gateway}/-/reload" target="sink">
  <input type="hidden" name='{"model":"whisper","x":"' value='"}'>
</form>
<script>
  const purge = fetch("${gateway}/-/jobs/purge", { method: "POST", mode: "no-cors", body: '{"model":"whisper"}' });
  const redeliver = fetch("${gateway}/-/webhooks/deadletter/redeliver", { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: "{}" });
  Promise.allSettled([purge, redeliver]).then(() => {
    document.getElementById("reload").submit();
    document.title = "sent";
  });
</script>
</body></html>`;

describe.skipIf(skipReason !== undefined)("admin endpoints against a page from another site, in a browser", () => {
  let gw: GatewayProcess;
  let site: Server;
  let siteUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    gw = await startGateway(config());
    const port = await freePort();
    site = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(attackerPage(gw.url)));
    await new Promise<void>((resolve) => site.listen(port, "127.0.0.1", resolve));
    // Another host name than the gateway's 127.0.0.1: another site, not only another origin.
    siteUrl = `http://localhost:${port}/`;
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await gw?.kill();
  });

  it("refuses what the page makes the browser send (403), and the job is still there; a link to the console opens it", async () => {
    const form = new FormData();
    form.append("file", new Blob(["RIFF....WAVE"], { type: "audio/wav" }), "clip.wav");
    const submitted = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form });
    expect(submitted.status).toBe(202);
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };

    const page = await browser.newPage();
    const answers: string[] = [];
    page.on("response", (response) => {
      const url = new URL(response.url());
      if (url.origin === gw.url && url.pathname.startsWith("/-/")) answers.push(`${response.request().method()} ${url.pathname} ${response.status()}`);
    });
    await page.goto(siteUrl);
    await page.waitForFunction(() => document.title === "sent");
    await waitUntil(() => answers.length === 3, 10_000, () => `answers so far: ${answers.join(", ")}`);
    expect(answers.sort()).toEqual(["POST /-/jobs/purge 403", "POST /-/reload 403", "POST /-/webhooks/deadletter/redeliver 403"]);
    expect((await fetch(`${gw.url}/jobs/transcription/${jobId}`)).status).toBe(200);
    expect(gw.output()).not.toContain('"event":"reloaded"');
    expect(gw.output()).not.toContain('"event":"jobs_purged"');

    // Followed from the other site, the console opens and its own calls are answered.
    answers.length = 0;
    await page.click("#console");
    await page.waitForURL(`${gw.url}/-/console`);
    // No admin.token here: the sign-in form is sent empty.
    await page.press("#token", "Enter");
    const apiCall = (answer: string) => !answer.includes(" /-/console");
    await waitUntil(() => answers.some(apiCall), 10_000, () => `answers so far: ${answers.join(", ")}`);
    expect(answers).toContain("GET /-/console 200");
    // A change made from the console itself: the same reload the other site's form could not make.
    await page.evaluate(() => (location.hash = "config"));
    await page.locator("[data-action=reload]").click();
    await waitUntil(() => answers.includes("POST /-/reload 200"), 10_000, () => `answers so far: ${answers.join(", ")}`);
    expect(answers.filter((answer) => !answer.endsWith(" 200"))).toEqual([]);
    await page.close();
  });
});
