/**
 * The GenAI view of LLM traffic as a collector and a scraper see it: the real gateway exports
 * OTLP/HTTP to a local receiver. Asserted: the `gen_ai.*` attributes on the span of an LLM
 * request (chat completions or an inbound Messages request), next to the gateway's own (and its cost); `gen_ai.client.token.usage` in the OTLP metrics; and
 * `svc_llm_time_to_first_token_seconds` on /metrics after a stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHAT_USAGE, type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { flatten, type OtlpReceiver, startOtlpReceiver } from "../fixtures/otlp-receiver.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";

const SERVER = 2;

let receiver: OtlpReceiver;
let backend: FakeBackend;
let gw: GatewayProcess;

beforeAll(async () => {
  [receiver, backend] = await Promise.all([startOtlpReceiver(), startLlmBackend()]);
  gw = await startGateway(
    `
opentelemetry:
  enabled: true
  exporter: { endpoint: ${receiver.url} }
  traces: { sample_ratio: 1 }
  metrics: { enabled: true, interval: 1s }
pricing:
  models:
    assistant: {input: 2, output: 8}
services:
  - { type: chat, model: assistant, provider: chat_completions, inference_url: ${backend.url}, operations: { chat: [/v1/chat/completions], messages: [/v1/messages] } }
`,
    { env: { OTEL_BSP_SCHEDULE_DELAY: "100" } },
  );
});
afterAll(async () => {
  await gw?.kill();
  await Promise.all([receiver?.close(), backend?.stop()]);
});

const chat = (stream: boolean) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "assistant", stream, messages: [{ role: "user", content: "hello" }] }),
  });

describe("GenAI observability", () => {
  it("puts the GenAI attributes on the span of an LLM request, next to the gateway's own", async () => {
    const response = await chat(false);
    expect(response.status).toBe(200);
    await response.text();
    const span = () => receiver.spans.find((s) => s.kind === SERVER && s.attributes["url.path"] === "/v1/chat/completions");
    await waitUntil(() => span() !== undefined, 15_000, () => JSON.stringify(receiver.spans).slice(0, 2000));
    expect(span()?.attributes).toMatchObject({
      "gateway.model": "assistant",
      "gateway.service_type": "chat",
      "http.response.status_code": 200,
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "chat_completions",
      "gen_ai.system": "chat_completions",
      "gen_ai.request.model": "assistant",
      "gen_ai.response.model": "assistant",
      "gen_ai.usage.input_tokens": CHAT_USAGE.prompt_tokens,
      "gen_ai.usage.output_tokens": CHAT_USAGE.completion_tokens,
      "gen_ai.response.finish_reasons": '["stop"]',
      // The request's cost (pricing): 11 x 2 + 7 x 8 per 1M tokens.
      "gateway.cost": 0.000078,
    });
  });

  it("puts them on the span of an inbound Messages request too, its stop reason as the finish reason", async () => {
    const response = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "assistant", max_tokens: 16, messages: [{ role: "user", content: "hello" }] }),
    });
    expect(response.status).toBe(200);
    await response.text();
    const span = () => receiver.spans.find((s) => s.kind === SERVER && s.attributes["url.path"] === "/v1/messages");
    await waitUntil(() => span() !== undefined, 15_000, () => JSON.stringify(receiver.spans).slice(0, 2000));
    expect(span()?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "chat_completions",
      "gen_ai.response.model": "assistant",
      "gen_ai.usage.input_tokens": CHAT_USAGE.prompt_tokens,
      "gen_ai.usage.output_tokens": CHAT_USAGE.completion_tokens,
      "gen_ai.response.finish_reasons": '["end_turn"]',
    });
  });

  it("exports gen_ai.client.token.usage with gen_ai.token.type input and output", async () => {
    const response = await chat(false);
    await response.text();
    const point = (type: string) =>
      receiver.metrics
        .flatMap((body) => body.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)))
        .filter((m) => m.name === "gen_ai.client.token.usage")
        .flatMap((m) => m.histogram?.dataPoints ?? [])
        .filter((p) => flatten(p.attributes)["gen_ai.token.type"] === type)
        .at(-1);
    await waitUntil(() => Number(point("output")?.count ?? 0) >= 1, 15_000, () => JSON.stringify(receiver.metrics.at(-1)).slice(0, 2000));
    expect(flatten(point("input")?.attributes)).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "chat_completions",
      "gen_ai.request.model": "assistant",
    });
    expect(Number(point("input")?.count)).toBeGreaterThanOrEqual(1);
  });

  it("observes the time to first token of a stream on /metrics", async () => {
    const scrape = async () => await (await fetch(`${gw.url}/metrics`)).text();
    const count = (text: string) => metricValue(text, "svc_llm_time_to_first_token_seconds_count", { service_type: "chat", model: "assistant" });
    const before = count(await scrape());
    const response = await chat(true);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("[DONE]");
    expect(count(await scrape())).toBe(before + 1);
  });
});
