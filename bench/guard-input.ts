/**
 * `node dist/bench/guard-input.js typical|dense [N]`: the input guardrails of the guard-input
 * scenarios in this process, N requests a round (default 40,000), five rounds each way
 * interleaved: the client's body parsed as the gateway parses it, the rules' hook opened and
 * run (`rules`), and the masked body written again as the gateway writes it
 * (`changedBodyPieces` and their UTF-8) or with `JSON.stringify` (what it did before). Prints CPU
 * µs per request: what the rules cost before the gateway's own costs (garbage collection of 32
 * requests in flight, caches) are added (bench/README.md, "Guardrails").
 */
import { silentLogger } from "../core/log.ts";
import { changedBodyJson, changedBodyPieces } from "../core/llm/json-text.ts";
import type { JsonObject } from "../core/llm/json.ts";
import { utf8, utf8Pieces } from "../core/llm/utf8-blocks.ts";
import type { RequestContext } from "../core/pipeline/context.ts";
import { parseJsonBytes } from "../core/request-body/json-body.ts";
import { guardrailsHook } from "../plugins/guardrails/guard.ts";
import { compiledRules } from "../test/support/guardrail-rules.ts";
import { MODELS } from "./config.ts";
import { guardedPrompt } from "./scenarios.ts";

const [kind, count] = process.argv.slice(2);
const requests = Number(count ?? 40_000);
if ((kind !== "typical" && kind !== "dense") || !(requests > 0)) {
  console.error("usage: node dist/bench/guard-input.js typical|dense [N]");
  process.exit(2);
}

const model = MODELS.guardIn;
// The rules of bench/config.ts's GUARDRAILS for the input.
const rules = compiledRules([
  { name: "bench-pii", kind: "pii", on: ["input"], action: "mask", entities: ["email", "phone", "credit_card", "iban", "secret"] },
  { name: "bench-codes", kind: "regex", on: ["input"], action: "mask", patterns: ["TICKET-[0-9]{4,}"] },
]);
const hook = guardrailsHook(rules, { metrics: { action() {}, error() {} }, log: silentLogger, ids: { newId: () => "bench" } });
const ctx = { principal: { consumer: "bench" }, request: new Request("http://bench/") } as unknown as RequestContext;
const bytes = new TextEncoder().encode(guardedPrompt(kind).replace("[<id>]", "42"));

function parsed(): { value: JsonObject; escapeFree: boolean } {
  const result = parseJsonBytes(bytes);
  if (!result.ok) throw new Error(result.message);
  return { value: result.json.value as JsonObject, escapeFree: result.json.escapeFree };
}

async function masked(): Promise<{ original: { value: JsonObject; escapeFree: boolean }; changed: JsonObject }> {
  const original = parsed();
  const changed = await hook.open({ ctx, model, stream: false })!.input!(original.value);
  if (!changed) throw new Error("the rules masked nothing");
  return { original, changed };
}

const ways: Record<string, () => Promise<unknown>> = {
  parse: async () => parsed(),
  rules: masked,
  "rules + changedBodyPieces": async () => {
    const { original, changed } = await masked();
    return utf8Pieces(changedBodyPieces(changed, original).pieces);
  },
  "rules + JSON.stringify": async () => utf8(JSON.stringify((await masked()).changed)),
};

const check = await masked();
if (changedBodyJson(check.changed, check.original) !== JSON.stringify(check.changed)) throw new Error("the two ways wrote different JSON");

const rounds: Record<string, number[]> = {};
for (let round = 0; round < 6; round++) {
  for (const [name, way] of Object.entries(ways)) {
    const start = process.cpuUsage();
    for (let i = 0; i < requests; i++) await way();
    const used = process.cpuUsage(start);
    // The first round warms up.
    if (round > 0) (rounds[name] ??= []).push((used.user + used.system) / requests);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const [name, values] of Object.entries(rounds)) {
  console.log(`${name.padEnd(26)} ${median(values).toFixed(2)} µs per request (rounds ${values.map((v) => v.toFixed(2)).join(", ")})`);
}
