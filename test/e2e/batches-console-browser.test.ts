/**
 * The batches panel of the admin console in a real browser (headless chromium through
 * playwright-core) against a real gateway process: a finished batch and a running one (its
 * backend holds the answers) are listed with their owner, status and progress; on a gateway
 * with batches off, the panel says how to turn them on. Node only; skipped without /usr/bin/chromium.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HeldBackend, startHeldBackend } from "../fixtures/held-backend.ts";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, onDeno, startGateway, waitUntil } from "../support/gateway-process.ts";

const CHROMIUM = "/usr/bin/chromium";
const skipReason = onDeno ? "runs on Node only" : existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
if (skipReason) console.warn(`batches console browser test skipped: ${skipReason}`);

describe.skipIf(skipReason !== undefined)("the batches panel in a browser", () => {
  let llm: FakeBackend;
  let held: HeldBackend;
  let gw: GatewayProcess;
  let off: GatewayProcess;
  const dir = mkdtempSync(join(tmpdir(), "gw-batches-console-"));

  beforeAll(async () => {
    [llm, held] = await Promise.all([startLlmBackend(), startHeldBackend()]);
    gw = await startGateway(`
admin: { token: console-token }
server: { consumer_header: X-Consumer }
object_store: { dir: ${JSON.stringify(dir)} }
batches: { enabled: true }
services:
  - { type: chat, model: fast, provider: chat_completions, inference_url: ${llm.url}, operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: slow, provider: chat_completions, inference_url: ${held.url}, operations: { chat: [/v1/chat/completions] } }
`);
    off = await startGateway("admin: { token: console-token }\nservices: []\n");
  }, 60_000);
  afterAll(async () => {
    held?.release();
    await gw?.kill();
    await off?.kill();
    await Promise.all([llm?.stop(), held?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  async function batch(consumer: string, model: string, count: number): Promise<string> {
    const lines = Array.from(
      { length: count },
      (_, i) =>
        JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: `x${i}` }] } }),
    );
    const form = new FormData();
    form.append("purpose", "batch");
    form.append("file", new Blob([lines.join("\n")]), "in.jsonl");
    const file = (await (await fetch(`${gw.url}/v1/files`, { method: "POST", headers: { "x-consumer": consumer }, body: form })).json()) as { id: string };
    const created = await fetch(`${gw.url}/v1/batches`, {
      method: "POST",
      headers: { "x-consumer": consumer, "content-type": "application/json" },
      body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
    });
    return ((await created.json()) as { id: string }).id;
  }
  const status = async (id: string) =>
    ((await (await fetch(`${gw.url}/-/batches?limit=10`, { headers: { authorization: "Bearer console-token" } })).json()) as {
      data: Array<{ id: string; status: string; in_flight: number }>;
    }).data.find((b) => b.id === id);

  it("lists each batch with its owner, status and progress", async () => {
    const finished = await batch("alice", "fast", 3);
    await waitUntil(async () => (await status(finished))?.status === "completed", 20_000);
    held.hold();
    const running = await batch("bob", "slow", 4);
    await waitUntil(async () => ((await status(running))?.in_flight ?? 0) > 0, 20_000);

    const { chromium } = await import("playwright-core");
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${gw.url}/-/console`);
      await page.locator("#token").fill("console-token");
      await page.getByRole("button", { name: "Open the console" }).click();
      await page.locator("[data-tab=batches]").click();
      const done = page.locator(`[data-table=batches] tr[data-batch="${finished}"]`);
      await expect.poll(() => done.textContent()).toContain("completed");
      expect(await done.textContent()).toContain("alice");
      expect(await done.locator("[data-progress]").getAttribute("data-progress")).toBe("100");
      expect(await done.textContent()).toContain("3 / 3");
      const busy = page.locator(`[data-table=batches] tr[data-batch="${running}"]`);
      await expect.poll(() => busy.textContent()).toContain("in_progress");
      expect(await busy.textContent()).toContain("bob");
      expect(await busy.textContent()).toMatch(/running/);
      await page.goto(`${off.url}/-/console`);
      await page.locator("#token").fill("console-token");
      await page.getByRole("button", { name: "Open the console" }).click();
      await page.locator("[data-tab=batches]").click();
      await expect.poll(() => page.locator("[data-batches-off]").textContent()).toContain("batches.enabled: true");
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      held.release();
    }
  });
});
