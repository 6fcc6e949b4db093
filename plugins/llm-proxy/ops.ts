/**
 * The LLM proxy's atomic operation, written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/llm-proxy/ops.test.ts runs it on both stores.
 */
import type { AtomicOp } from "../../core/stores/kv.ts";

/**
 * Adds to several fields of one hash (HINCRBY each): a turn's consumer token counts in one
 * command instead of two per response.
 * KEYS[1] the hash. ARGV field 1, increment 1 (integer), field 2, increment 2, ...
 * Reply: the number of fields added to.
 */
export const hashAdd: AtomicOp<number> = {
  name: "llmHashAdd",
  lua: `
for i = 1, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
return #ARGV / 2
`,
  js: (data, [key], args) => {
    for (let i = 0; i < args.length; i += 2) data.hincrBy(key, args[i], Number(args[i + 1]));
    return args.length / 2;
  },
};
