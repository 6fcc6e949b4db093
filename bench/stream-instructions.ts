/**
 * `node dist/bench/stream-instructions.js pass|masked N`: N streams of the bench's 22 events
 * (after 500 to warm up) through the gateway's stream code in this process: passed on as the
 * gateway without rules passes them (`pass`), or through an output `email` mask (`masked`),
 * as `guard-stream-out` sends them. Meant to run under valgrind, whose instruction counts do not
 * move with the machine's load (bench/README.md, "Guardrails"):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node dist/bench/stream-instructions.js masked 0
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node dist/bench/stream-instructions.js masked 3000
 *
 * The difference of the two "Collected" totals over 3,000 is the instructions per stream.
 */
import { silentLogger } from "../core/log.ts";
import { passStream, translateStream } from "../core/llm/stream.ts";
import type { Translator } from "../core/llm/provider.ts";
import type { RequestContext } from "../core/pipeline/context.ts";
import { guardrailsHook } from "../plugins/guardrails/guard.ts";
import { RequestHooks } from "../plugins/llm-proxy/hooks.ts";
import { watchingTranslator } from "../plugins/provider-chat-completions/hosts.ts";
import { compiledRules } from "../test/support/guardrail-rules.ts";
import { STREAM_EVENTS } from "./fixtures.ts";

const [mode, count] = process.argv.slice(2);
if ((mode !== "pass" && mode !== "masked") || !(Number(count) >= 0)) {
  console.error("usage: node dist/bench/stream-instructions.js pass|masked N");
  process.exit(2);
}

const chunks = STREAM_EVENTS.map((event) => new TextEncoder().encode(event));
const rules = compiledRules([{ name: "bench-out", kind: "pii", on: ["output"], action: "mask", entities: ["email"] }]);
const hook = guardrailsHook(rules, { metrics: { action() {}, error() {} }, log: silentLogger, ids: { newId: () => "bench" } });
const ctx = { principal: { consumer: "bench" }, request: new Request("http://bench/") } as unknown as RequestContext;

function backend(): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]);
      else controller.close();
    },
  });
}

function clientStream(): ReadableStream<Uint8Array> {
  const translator: Translator = watchingTranslator();
  if (mode === "pass") return passStream(backend(), () => {}, { translator });
  const opened = hook.open({ ctx, model: "bench", stream: true });
  const hooks = new RequestHooks(opened ? [opened] : [], true);
  return translateStream(backend(), { format: "sse", translator: hooks.wrapChat(translator, true), onError() {} });
}

let bytes = 0;
for (let i = 0; i < 500 + Number(count); i++) {
  const reader = clientStream().getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) bytes += read.value.byteLength;
}
console.log(`${bytes} bytes`);
