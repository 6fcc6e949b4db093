/**
 * docs/api-keys.md's lifecycle blocks need `admin.token` and `auth.mode: api_key`, which the
 * snippet test's gateway (config.example.yaml) does not have. This test starts the built
 * gateway with the page's own configuration (its first yaml block, the env variables it
 * names set, a fake chat backend as `chat-small`) and runs the page's shell blocks in order in
 * one shell, so the variables one block sets ($KEY, $KEY_ID) are there for the next. Each
 * block's `<!-- expect: -->` lines must be in its output. Node only, like the snippet test.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, onDeno, repoRoot, startGateway } from "../support/gateway-process.ts";

const page = readFileSync(join(repoRoot, "docs/api-keys.md"), "utf8");
const MARK = "test/docs/api-keys-doc.test.ts";

interface Block {
  code: string;
  expects: string[];
}

/** The page's shell blocks this test runs (their not-run mark names it), with their expect marks. */
function blocks(): Block[] {
  const out: Block[] = [];
  const lines = page.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```sh") continue;
    const marks: string[] = [];
    for (let j = i - 1; j >= 0 && lines[j].startsWith("<!--"); j--) marks.push(lines[j]);
    let end = i + 1;
    while (lines[end] !== "```") end++;
    if (marks.some((m) => m.includes(MARK))) {
      out.push({ code: lines.slice(i + 1, end).join("\n"), expects: marks.flatMap((m) => /^<!-- expect: (.*) -->$/.exec(m)?.[1] ?? []) });
    }
    i = end;
  }
  return out;
}

const yaml = /```yaml\n([\s\S]*?)```/.exec(page)?.[1] ?? "";

let backend: FakeBackend;
let gateway: GatewayProcess | undefined;

beforeAll(async () => {
  if (onDeno) return;
  backend = await startLlmBackend();
  const services =
    `services:\n  - { type: llm, model: chat-small, provider: chat_completions, inference_url: "${backend.url}", operations: { chat: [/v1/chat/completions] } }\n`;
  gateway = await startGateway(`${yaml}${services}`, { env: { GATEWAY_ADMIN_TOKEN: "admin-token", GATEWAY_API_KEY_SECRET: "doc-secret" } });
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await backend?.stop();
});

it.skipIf(onDeno)("docs/api-keys.md: the lifecycle blocks run in order against the page's configuration", async () => {
  const list = blocks();
  expect(list.length).toBeGreaterThanOrEqual(5);
  const port = String(gateway?.port);
  // Each block's output between markers, so its expects are checked against its own output.
  const script = list.map((block, index) => `echo; echo "@@block ${index}"\n${block.code.replaceAll("localhost:8080", `127.0.0.1:${port}`)}`).join("\n");
  const child = spawn("bash", ["-e", "-o", "pipefail", "-c", script], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  expect(code, output).toBe(0);
  const outputs = output.split(/^@@block \d+\n/m).slice(1);
  list.forEach((block, index) => {
    for (const text of block.expects) expect(outputs[index], `block ${index}:\n${outputs[index]}`).toContain(text);
  });
});
