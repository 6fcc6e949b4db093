/**
 * The interactive docs page in a real browser: headless Debian chromium (driven by
 * playwright-core) opens /docs with every request that is not for the gateway aborted, so
 * the page must work offline, and lists the gateway's operations. A screenshot is saved
 * under test-artifacts/. Node only (playwright does not run under Deno); skipped, saying
 * so, when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, onDeno, repoRoot, startGateway } from "../support/gateway-process.ts";

const CHROMIUM = "/usr/bin/chromium";
const skipReason = onDeno ? "runs on Node only" : existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
if (skipReason) console.warn(`docs browser test skipped: ${skipReason}`);

const config = `
services:
  - type: chat
    model: gpt-a
    provider: chat_completions
    inference_url: http://127.0.0.1:9
    operations: { chat: [/v1/chat/completions] }
  - type: transcription
    model: whisper
    deprecated: true
    inference_url: http://127.0.0.1:9
    operations: { transcribe: [/v1/audio/transcriptions] }
`;

describe.skipIf(skipReason !== undefined)("GET /docs in a browser", () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config);
  });
  afterAll(async () => {
    await gw?.kill();
  });

  it("lists the gateway's operations with the network to anything else blocked", async () => {
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
      const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
      const blocked: string[] = [];
      const failedScripts: string[] = [];
      page.on("pageerror", (error) => failedScripts.push(error.message));
      await page.route("**/*", async (route) => {
        const url = route.request().url();
        if (url.startsWith(`${gw.url}/`)) return await route.continue();
        blocked.push(url);
        await route.abort();
      });

      await page.goto(`${gw.url}/docs`);
      await page.locator(".opblock").first().waitFor({ timeout: 20_000 });
      // Swagger UI renders a deprecated operation's path with its own class.
      const listed = await page.locator(".opblock-summary-path, .opblock-summary-path__deprecated").evaluateAll((nodes) =>
        nodes.map((n) => n.getAttribute("data-path"))
      );
      for (const path of ["/v1/chat/completions", "/v1/audio/transcriptions", "/jobs/{service_type}/{id}", "/health", "/-/reload", "/openapi.yaml"]) {
        expect(listed, path).toContain(path);
      }
      // The deprecated model's only path renders as a deprecated operation.
      expect(await page.locator(".opblock-deprecated [data-path='/v1/audio/transcriptions']").count()).toBe(1);
      expect(await page.title()).toBe("Inference gateway API");

      const artifacts = join(repoRoot, "test-artifacts");
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: join(artifacts, "docs-page.png"), fullPage: true });

      expect(failedScripts).toEqual([]);
      expect(blocked).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
