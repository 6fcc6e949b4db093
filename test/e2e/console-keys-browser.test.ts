/**
 * The console's API keys panel in a real browser (headless Debian chromium via playwright-core)
 * against a real gateway in api_key mode on the suite's redis-server (database 4, flushed when
 * the file starts), with a fake chat backend and a price table: a key created in the page, its
 * secret read from the one-time box (and found nowhere in the page's storage), authenticates a
 * priced chat request; disabled in the page it is refused within cache_ttl, enabled again it
 * works; rotated, the new secret works; revoked (after a confirm), it is refused. A disabled key
 * shows as disabled whether the API says "status":"disabled" or "active" with "enabled":false.
 * The usage panel then shows the request's cost in the chart and each key's group
 * (group_by=key: a short id and its consumer, in separate columns, labels side by side without
 * overlap); the backends panel the backend's attempts. A second gateway without admin.token:
 * the panel says the key API needs one. A third with auth.api_key.secret in auth.mode none:
 * keys are issued but not checked yet, and the panel says so. Node only; skipped, saying so,
 * without /usr/bin/chromium.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "redis";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, onDeno, repoRoot, startGateway, waitUntil } from "../support/gateway-process.ts";

const CHROMIUM = "/usr/bin/chromium";
const DB = 4;
const skipReason = onDeno ? "runs on Node only" : existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
if (skipReason) console.warn(`console keys browser test skipped: ${skipReason}`);

const TOKEN = "console-test-token";
// 11 prompt and 7 completion tokens (the fake backend's usage) at 2 and 8 per 1M: 0.000078.
const COST = 0.000078;

const config = (llmUrl: string, store: string, admin: string, mode = "api_key") => `
${admin}
auth:
  mode: ${mode}
  api_key: { secret: console-keys-hmac-secret, cache_ttl: 100ms }
server:
  consumer_header: X-Consumer
${store}
relay:
  embedded: false
pricing:
  currency: USD
  models:
    gpt: { input: 2, output: 8 }
services:
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llmUrl}
    operations: { chat: [/v1/chat/completions] }
`;

describe.skipIf(skipReason !== undefined)("the console's API keys panel in a browser", () => {
  let gw: GatewayProcess;
  let open: GatewayProcess;
  let issuing: GatewayProcess;
  let llm: FakeBackend;
  let redis: ReturnType<typeof createClient>;
  let browser: Browser;

  beforeAll(async () => {
    redis = createClient({ url: inject("redisUrl"), database: DB });
    await redis.connect();
    await redis.flushDb();
    llm = await startLlmBackend();
    gw = await startGateway(config(llm.url, `redis:\n  addr: ${JSON.stringify(inject("redisUrl"))}\n  db: ${DB}`, `admin:\n  token: ${TOKEN}`));
    open = await startGateway(config(llm.url, "", ""));
    issuing = await startGateway(config(llm.url, "", `admin:\n  token: ${TOKEN}`, "none"));
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
    await gw?.kill();
    await open?.kill();
    await issuing?.kill();
    await llm?.stop();
    await redis?.close();
  });

  const chat = (url: string, key: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content: "hello" }] }),
    });
  /** Polls (cache_ttl is 100ms) until a request with `key` answers `status`; the last body. */
  async function until(key: string, status: number): Promise<string> {
    let body = "";
    await waitUntil(
      async () => {
        const response = await chat(gw.url, key);
        body = await response.text();
        return response.status === status;
      },
      10_000,
      () => `wanted ${status}, last body: ${body}`,
    );
    return body;
  }

  const shots = join(repoRoot, "test-artifacts");
  const screenshot = (page: Page, name: string) => page.screenshot({ path: join(shots, `console-${name}.png`), fullPage: true });

  async function signedIn(url: string, token: string): Promise<{ page: Page; failedScripts: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const failedScripts: string[] = [];
    page.on("pageerror", (error) => failedScripts.push(error.message));
    await page.route("**/*", (route) => (route.request().url().startsWith(`${url}/`) ? route.continue() : route.abort()));
    await page.goto(`${url}/-/console#keys`);
    await page.locator("#token").fill(token);
    await page.getByRole("button", { name: "Open the console" }).click();
    return { page, failedScripts };
  }

  it("creates a key whose one-time secret authenticates, disables, enables, rotates and revokes it, and shows its cost", async () => {
    mkdirSync(shots, { recursive: true });
    const { page, failedScripts } = await signedIn(gw.url, TOKEN);
    const panel = page.locator("[data-panel=keys]");
    await panel.getByText("Nothing here.").waitFor();

    const form = panel.locator("[data-form=create-key]");
    await form.locator("[data-field=consumer]").fill("team-console");
    await form.locator("[data-field=user_type]").fill("standard");
    await form.locator("[data-field=models]").fill("gpt*, chat-*");
    await form.locator("[data-field=expires_at]").fill("2099-01-01T00:00");
    await form.locator("[data-field=rate]").fill("100");
    await form.locator("[data-field=period]").fill("1m");
    await form.locator("[data-field=token_rate]").fill("100000");
    await form.locator("[data-field=token_period]").fill("1h");
    await form.locator("[data-field=cost_rate]").fill("5");
    await form.locator("[data-field=cost_period]").fill("24h");
    await form.locator("[data-action=create]").click();

    const box = panel.locator("[data-secret-box]");
    const secret = (await box.locator("[data-secret]").textContent()) ?? "";
    expect(secret).toMatch(/^gw-/);
    await screenshot(page, "keys");
    // Shown once: in the box only, not in the page's storage.
    const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + document.cookie);
    expect(stored).not.toContain(secret);

    // The listing: one key, as created.
    const row = panel.locator("[data-table=keys] tbody tr");
    await expect.poll(() => row.count()).toBe(1);
    const id = (await row.getAttribute("data-key")) ?? "";
    const listed = (await row.textContent()) ?? "";
    for (const part of ["team-console", "standard", "gpt*, chat-*", "enabled", "2099-01-01 00:00:00Z"]) expect(listed).toContain(part);
    expect(listed).toContain(id); // the usage panel's groups per key name it
    expect(listed).not.toContain(secret);
    const stored_ = (await (await fetch(`${gw.url}/-/keys/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as Record<string, unknown>;
    expect(stored_).toMatchObject({
      consumer: "team-console",
      user_type: "standard",
      models: ["gpt*", "chat-*"],
      expires_at: "2099-01-01T00:00:00.000Z",
      limits: { rate: 100, period: "1m", token_rate: 100000, token_period: "1h", cost_rate: 5, cost_period: "24h" },
    });

    // The secret authenticates a priced request; the backend gets the key's consumer.
    const answered = await chat(gw.url, secret);
    expect(answered.status, await answered.clone().text()).toBe(200);
    expect(Number(answered.headers.get("x-gateway-cost"))).toBeCloseTo(COST, 9);
    expect(llm.calls("/v1/chat/completions").at(-1)?.headers["x-consumer"]).toBe("team-console");
    await box.locator("[data-action=hide-secret]").click();
    expect(await panel.locator("[data-secret-box]").count()).toBe(0);

    // Disabled from the page: refused within cache_ttl; enabled again: it works.
    await row.locator("[data-action=disable]").click();
    await row.locator("[data-status=disabled]").waitFor();
    expect(await until(secret, 401)).toContain("disabled API key");
    // The listing in the other of the two ways an API says "disabled": the same row.
    let rewritten = 0;
    await page.route(/\/-\/keys\?/, async (route) => {
      const answer = await route.fetch();
      const listing = (await answer.json()) as { keys: Record<string, unknown>[] };
      for (const key of listing.keys) {
        if (key.status === "disabled") Object.assign(key, { status: "active", enabled: false });
        else if (key.status === "active" && key.enabled === false) Object.assign(key, { status: "disabled", enabled: undefined });
        else continue;
        rewritten++;
      }
      await route.fulfill({ response: answer, json: listing });
    });
    const shown = await row.elementHandle();
    await panel.locator("[data-action=filter]").click();
    await page.waitForFunction((tr) => !tr?.isConnected, shown); // the listing drawn again
    expect(rewritten).toBe(1);
    expect(await row.locator("[data-status=disabled]").count()).toBe(1);
    expect(await row.locator("[data-action=enable]").textContent()).toBe("Enable");
    await page.unroute(/\/-\/keys\?/);
    await row.locator("[data-action=enable]").click();
    await row.locator("[data-status=enabled]").waitFor();
    await until(secret, 200);

    // Rotated: the new secret in the box, with when the old one stops.
    await row.locator("[data-action=rotate]").click();
    const rotated = (await box.locator("[data-secret]").textContent()) ?? "";
    expect(rotated).toMatch(/^gw-/);
    expect(rotated).not.toBe(secret);
    expect(await box.textContent()).toMatch(/previous secret keeps working until \d{4}-\d{2}-\d{2} /);
    expect((await chat(gw.url, rotated)).status).toBe(200);

    // Revoked after a confirm (dismissed first: nothing happens).
    page.once("dialog", (dialog) => void dialog.dismiss());
    await row.locator("[data-action=revoke]").click();
    await expect.poll(async () => (await row.locator("[data-action=revoke]").isEnabled())).toBe(true);
    expect(await row.locator("[data-status=enabled]").count()).toBe(1);
    page.once("dialog", (dialog) => void dialog.accept());
    await row.locator("[data-action=revoke]").click();
    await row.locator("[data-status=revoked]").waitFor();
    expect(await until(rotated, 401)).toContain("revoked API key");
    expect(await row.locator("button").count()).toBe(0);

    // Paging and the consumer filter: a second consumer's key.
    const other = await fetch(`${gw.url}/-/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ consumer: "team-other" }),
    });
    expect(other.status).toBe(201);
    const otherKey = (await other.json()) as { id: string; key: string };
    expect((await chat(gw.url, otherKey.key)).status).toBe(200);
    await panel.locator("[data-control=consumer-filter]").fill("team-other");
    await panel.locator("[data-control=consumer-filter]").press("Enter");
    await expect.poll(async () => (await panel.locator("[data-table=keys] tbody").textContent()) ?? "").toContain("team-other");
    expect(await panel.locator("[data-table=keys] tbody tr").count()).toBe(1);
    expect(await panel.locator(".pager").textContent()).toContain("1-1 of 1");

    // Usage: the priced requests' cost in the chart and per key.
    await page.locator("[data-tab=usage]").click();
    const usage = page.locator("[data-panel=usage]");
    await usage.locator("[data-control=group-by]").selectOption("key");
    await usage.locator("[data-chart=cost] rect.bar").last().waitFor();
    const requests = llm.calls("/v1/chat/completions").length;
    await expect.poll(async () => Number(await usage.locator("[data-chart=cost] rect.bar").last().getAttribute("data-value"))).toBeCloseTo(requests * COST, 9);
    // The bar is drawn to scale (a cost of 0.0002 is not a sliver under an axis of 1), and the axis and tables show the fraction.
    const costBar = usage.locator("[data-chart=cost] rect.bar").last();
    expect(Number(await costBar.getAttribute("height"))).toBeGreaterThan(100);
    const total = String(Number((requests * COST).toPrecision(2)));
    expect(await usage.locator("[data-chart=cost] text.tick").allTextContents()).toContain(total);
    // Per key: the key's short id and its consumer in columns of their own, most cost first.
    const short = (keyId: string) => `${keyId.slice(0, 12)}\u2026`;
    const groups = usage.locator("[data-table=usage-groups] tbody tr");
    await expect.poll(() => usage.locator("[data-table=usage-groups] th").allTextContents()).toEqual(["API key", "Consumer", "Requests", "Tokens", "Cost"]);
    expect(await groups.count()).toBe(2);
    const mine = requests - 1;
    expect(await groups.nth(0).locator("td").allTextContents()).toEqual([
      short(id),
      "team-console",
      String(mine),
      String(mine * 18),
      String(Number((mine * COST).toFixed(6))),
    ]);
    expect(await groups.nth(0).getAttribute("data-group")).toBe(id);
    expect(await groups.nth(0).locator("code").getAttribute("title")).toBe(id);
    expect(await groups.nth(1).locator("td").allTextContents()).toEqual([short(otherKey.id), "team-other", "1", "18", String(COST)]);
    // The chart: one row per key, its label whole and beside its bar, no two labels on top of each other.
    const labels = usage.locator("[data-chart=groups] .rank-label");
    expect(await labels.allTextContents()).toEqual([`${short(id)} (team-console)`, `${short(otherKey.id)} (team-other)`]);
    const boxes = await labels.evaluateAll((spans) =>
      spans.map((span) => ({ ...span.getBoundingClientRect().toJSON(), whole: span.scrollWidth <= span.clientWidth }))
    );
    expect(boxes.map((box) => box.whole)).toEqual([true, true]);
    expect(boxes[1].top).toBeGreaterThanOrEqual(boxes[0].bottom);
    const bars = usage.locator("[data-chart=groups] rect.bar");
    expect(await bars.first().getAttribute("width")).toBe("100");
    expect(Number(await bars.nth(1).getAttribute("width"))).toBeCloseTo(100 / mine, 6);
    expect(await bars.first().getAttribute("data-label")).toBe(`${short(id)} (team-console)`);
    await screenshot(page, "usage-cost");

    // Backends: the attempts the chat requests made, none failed.
    await page.locator("[data-tab=backends]").click();
    const backend = page.locator("[data-table=backends] tbody tr").first();
    await backend.waitFor();
    const cells = await backend.locator("td").allTextContents();
    expect(cells.slice(5)).toEqual(["0", "0", String(requests), "0", "0 %"]);

    expect(failedScripts).toEqual([]);
    await page.close();
  });

  it("says keys are not checked yet when auth.api_key.secret is set in another mode", async () => {
    const { page, failedScripts } = await signedIn(issuing.url, TOKEN);
    const panel = page.locator("[data-panel=keys]");
    await panel.getByText("Nothing here.").waitFor();
    expect(await panel.locator(".message.info").first().textContent()).toBe(
      "auth.mode is none: the gateway does not check API keys yet. Keys issued here name their callers once auth.mode is api_key (set it and reload).",
    );
    expect(await panel.locator("[data-form=create-key]").count()).toBe(1);
    expect(await panel.locator("[data-keys-off]").count()).toBe(0);
    expect(failedScripts).toEqual([]);
    await page.close();
  });

  it("says the key API needs an admin token when the gateway has none", async () => {
    const { page, failedScripts } = await signedIn(open.url, "");
    const panel = page.locator("[data-panel=keys]");
    await panel.getByText("the key admin API needs an admin token").waitFor();
    expect(await panel.locator("[data-form=create-key]").count()).toBe(0);
    expect(failedScripts).toEqual([]);
    await page.close();
  });
});
