/**
 * The admin console in a real browser: headless Debian chromium (driven by playwright-core)
 * against a real gateway process on the suite's redis-server (database 31, flushed when the
 * file starts), with every request that is not for the gateway aborted (the console works
 * offline). With real traffic behind it: two jobs submitted by a consumer (the usage chart
 * shows them); one dead-lettered by the GC as a relay that died mid-job leaves it (moved to
 * the processing list with no lease; lifecycle.gc.max_reap_attempts 0), discarded from the
 * page; the other cancelled, its webhook failing its only attempt at a receiver process and
 * redelivered from the page, which the receiver then gets. Also: the backends list, the
 * config with its secrets redacted, the API keys panel of a gateway without keys (it says how
 * to turn them on), the usage per key of requests without one (their consumer in its own
 * column), and the tab bar in a 420 px wide window. Every JSON body the page sends says so
 * in its Content-Type. Screenshots of each view go to test-artifacts/console-*.png.
 * Node only (playwright does not run under Deno); skipped, saying so, without /usr/bin/chromium.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "redis";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayProcess, onDeno, repoRoot, startGateway, waitUntil } from "../support/gateway-process.ts";
import { type ReceiverProcess, startReceiverProcess } from "../support/webhook-receiver-process.ts";

const CHROMIUM = "/usr/bin/chromium";
const DB = 31;
const skipReason = onDeno ? "runs on Node only" : existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
if (skipReason) console.warn(`console browser test skipped: ${skipReason}`);

const SIGNING_SECRET = "whsec-do-not-show";
const BACKEND_KEY = "sk-backend-do-not-show";

const config = (redisUrl: string) => `
admin:
  token: console-test-token
server:
  consumer_header: X-Consumer
redis:
  addr: ${JSON.stringify(redisUrl)}
  db: ${DB}
relay:
  embedded: false
lifecycle:
  gc:
    enabled: true
    interval: 1s
    max_reap_attempts: 0
webhooks:
  max_retries: 1
  signing_secret: ${SIGNING_SECRET}
  allow_private_networks: true
services:
  - type: transcription
    model: whisper
    inference_url: http://127.0.0.1:9
    inference_headers: { Authorization: "Bearer ${BACKEND_KEY}" }
    operations: { transcribe: [/v1/audio/transcriptions] }
`;

describe.skipIf(skipReason !== undefined)("the admin console in a browser", () => {
  let gw: GatewayProcess;
  let receiver: ReceiverProcess;
  let redis: ReturnType<typeof createClient>;

  beforeAll(async () => {
    redis = createClient({ url: inject("redisUrl"), database: DB });
    await redis.connect();
    await redis.flushDb();
    receiver = await startReceiverProcess();
    gw = await startGateway(config(inject("redisUrl")));
  });
  afterAll(async () => {
    await gw?.kill();
    await receiver?.stop();
    await redis?.close();
  });

  async function submit(callbackUrl?: string): Promise<string> {
    const form = new FormData();
    form.append("file", new Blob(["RIFF....WAVE"], { type: "audio/wav" }), "clip.wav");
    if (callbackUrl) form.append("callback_url", callbackUrl);
    const response = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form, headers: { "X-Consumer": "alice" } });
    const body = (await response.json()) as { job_id: string };
    expect(response.status, JSON.stringify(body)).toBe(202);
    return body.job_id;
  }

  const shots = join(repoRoot, "test-artifacts");
  const screenshot = (page: Page, name: string) => page.screenshot({ path: join(shots, `console-${name}.png`), fullPage: true });

  it("shows usage, discards a relay dead letter, redelivers a webhook, lists backends and shows the redacted config", async () => {
    // A job dead-lettered by the GC: its relay "died" after claiming it (no lease left).
    const lost = await submit();
    expect(await redis.lMove("relay:whisper", "relay:whisper:processing", "LEFT", "RIGHT")).toBe(lost);
    await waitUntil(async () => (await redis.lLen("relay:whisper:deadletter")) === 1, 15_000, () => gw.output());
    // A cancelled job whose webhook fails its only attempt (the receiver answers 500 once).
    const cancelled = await submit(`${receiver.url}/hook?fail=1`);
    expect((await fetch(`${gw.url}/jobs/transcription/${cancelled}`, { method: "DELETE" })).status).toBe(202);
    await waitUntil(async () => (await redis.lLen("webhook:deadletter")) === 1, 15_000, () => gw.output());
    expect((await receiver.received(cancelled)).map((d) => d.answered)).toEqual([500]);

    mkdirSync(shots, { recursive: true });
    const { chromium } = await import("playwright-core");
    const browser = await chromium.launch({
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
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const blocked: string[] = [];
      const failedScripts: string[] = [];
      const authorizations = new Set<string>();
      const bodies: string[] = [];
      page.on("pageerror", (error) => failedScripts.push(error.message));
      await page.route("**/*", async (route) => {
        const url = route.request().url();
        if (!url.startsWith(`${gw.url}/`)) {
          blocked.push(url);
          return await route.abort();
        }
        if (new URL(url).pathname.startsWith("/-/") && !url.includes("/-/console")) authorizations.add(route.request().headers()["authorization"] ?? "(none)");
        const body = route.request().postData();
        if (body !== null) bodies.push(`${route.request().method()} ${new URL(url).pathname} ${route.request().headers()["content-type"]} ${body}`);
        await route.continue();
      });

      // The token form first; the token goes into sessionStorage and onto every API call.
      // Without the token the page answers 401, with the token form as its body.
      const opened = await page.goto(`${gw.url}/-/console`);
      expect(opened?.status()).toBe(401);
      await page.locator("#token").fill("console-test-token");
      await page.getByRole("button", { name: "Open the console" }).click();
      expect(await page.evaluate(() => sessionStorage.getItem("gateway-console-token"))).toBe("console-test-token");

      // Usage: today's bar counts the two submissions.
      const usage = page.locator("[data-panel=usage]");
      await usage.locator("[data-chart=requests] rect.bar").last().waitFor();
      expect(await usage.locator("[data-chart=requests] rect.bar").last().getAttribute("data-value")).toBe("2");
      await expect.poll(() => usage.locator("[data-table=top-consumers] tbody tr").first().textContent()).toContain("alice");
      await screenshot(page, "usage");

      // Per key: requests without a key count under their consumer, who is named as a consumer, not as a key.
      await usage.locator("[data-control=group-by]").selectOption("key");
      await expect.poll(() => usage.locator("[data-table=usage-groups] th").allTextContents()).toEqual(["API key", "Consumer", "Requests", "Tokens", "Cost"]);
      const alice = usage.locator("[data-table=usage-groups] tr[data-group=alice]");
      expect((await alice.locator("td").allTextContents()).slice(0, 3)).toEqual(["(none)", "alice", "2"]);
      expect(await usage.locator("[data-chart=groups] .rank-label").allTextContents()).toEqual(["alice (no key)"]);

      // A 420 px wide window: the tabs wrap below the title, none past the edge, nothing to scroll sideways.
      await page.setViewportSize({ width: 420, height: 900 });
      const widths = await page.evaluate(() => {
        const tabs = document.getElementById("tabs") as HTMLElement;
        const header = document.querySelector("header") as HTMLElement;
        return {
          tabs: [tabs.scrollWidth, tabs.clientWidth],
          header: [header.scrollWidth, header.clientWidth],
          page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
          rightmostTab: Math.max(...Array.from(tabs.querySelectorAll("a"), (a) => a.getBoundingClientRect().right)),
        };
      });
      expect(widths.tabs[0]).toBeLessThanOrEqual(widths.tabs[1]);
      expect(widths.header[0]).toBeLessThanOrEqual(widths.header[1]);
      expect(widths.page[0]).toBeLessThanOrEqual(widths.page[1]);
      expect(widths.rightmostTab).toBeLessThanOrEqual(420);
      await screenshot(page, "narrow");
      await page.setViewportSize({ width: 1280, height: 900 });

      // Queues: the dead letter with the GC's error, discarded from the page.
      await page.locator("[data-tab=queues]").click();
      const whisper = page.locator("[data-table=queues] tr[data-model=whisper]");
      await whisper.waitFor();
      expect(await whisper.locator("td").nth(4).textContent()).toBe("1");
      await whisper.locator("[data-action=show-deadletters]").click();
      const letter = page.locator(`[data-table=relay-deadletters] tr[data-job="${lost}"]`);
      await letter.waitFor();
      expect(await letter.textContent()).toMatch(/lease expired|relay/i);
      await screenshot(page, "queues");
      await letter.locator("[data-action=discard]").click();
      await page.getByText("Discarded 1 dead letter(s) of whisper.").waitFor();
      expect(await page.locator("[data-table=relay-deadletters]").count()).toBe(0); // the list is empty now
      expect(await page.locator("[data-panel=queues]").textContent()).not.toContain("null");
      await expect.poll(() => whisper.locator("td").nth(4).textContent()).toBe("0");
      expect(await redis.lLen("relay:whisper:deadletter")).toBe(0);

      // Webhooks: the dead letter, redelivered from the page; the receiver gets it.
      await page.locator("[data-tab=webhooks]").click();
      const delivery = page.locator(`[data-table=webhook-deadletters] tr[data-delivery="${cancelled}"]`);
      await delivery.waitFor();
      expect(await delivery.textContent()).toContain("HTTP 500");
      await screenshot(page, "webhooks");
      await delivery.locator("[data-action=redeliver]").click();
      await page.getByText("Redelivered 1 webhook(s).").waitFor();
      await waitUntil(async () => (await receiver.received(cancelled)).length === 2, 15_000);
      const [first, again] = await receiver.received(cancelled);
      expect(again.answered).toBe(200);
      expect(again.body).toBe(first.body);
      expect(JSON.parse(again.body)).toMatchObject({ job_id: cancelled, status: "cancelled" });
      expect(again.headers["x-svc-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(await page.locator("[data-panel=webhooks]").textContent()).not.toContain("null");

      // API keys: this gateway has none (auth.mode none, no auth.api_key.secret); the panel says how to turn them on.
      await page.locator("[data-tab=keys]").click();
      const off = page.locator("[data-panel=keys] [data-keys-off]");
      await off.waitFor({ timeout: 10_000 });
      const offText = (await off.textContent()) ?? "";
      expect(offText).toContain("API keys are off");
      expect(offText).toContain("auth.mode: none and no auth.api_key.secret");
      expect(offText).toContain("auth:\n  mode: none\n  api_key:\n    secret: ${GATEWAY_API_KEY_SECRET}");
      expect(offText).not.toContain("GATEWAY_ADMIN_TOKEN"); // this gateway has its admin token
      expect(offText).toContain("set auth.mode: api_key and reload");
      expect(await page.locator("[data-panel=keys]").textContent()).not.toMatch(/no route|HTTP 404/);
      expect(await page.locator("[data-panel=keys] [data-form=create-key]").count()).toBe(0);
      await screenshot(page, "keys-off");

      // Backends.
      await page.locator("[data-tab=backends]").click();
      const backend = page.locator("[data-table=backends] tbody tr").first();
      await backend.waitFor();
      expect(await backend.textContent()).toContain("http://127.0.0.1:9");
      expect(await backend.textContent()).toContain("healthy");
      await screenshot(page, "backends");

      // Config: secrets redacted; a reload from the page.
      await page.locator("[data-tab=config]").click();
      const shown = page.locator("[data-config]");
      await shown.waitFor();
      const text = (await shown.textContent()) ?? "";
      expect(text).toContain('"signing_secret": "***"');
      expect(text).toContain('"Authorization": "***"');
      expect(text).not.toContain(SIGNING_SECRET);
      expect(text).not.toContain(BACKEND_KEY);
      await page.locator("[data-action=reload]").click();
      await page.getByText("Reloaded: 1 service(s).").waitFor();
      await screenshot(page, "config");

      expect([...authorizations]).toEqual(["Bearer console-test-token"]);
      // The JSON bodies the page sent (discard, redeliver), each marked as JSON.
      expect(bodies.map((line) => line.split(" ").slice(0, 3).join(" "))).toEqual([
        "POST /-/relay/deadletter/discard application/json",
        "POST /-/webhooks/deadletter/redeliver application/json",
      ]);
      expect(failedScripts).toEqual([]);
      expect(blocked).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
