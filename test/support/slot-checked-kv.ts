/**
 * A KvStore wrapper that fails every multi-key call whose keys a Redis Cluster would refuse
 * (CROSSSLOT): the keys of one `run` (KEYS and the op's keyArgs), `mget`, `del` or `move`,
 * stored under their cluster names (core/stores/hash-tags.ts), must share one hash slot.
 * Every in-process test runtime wraps its memory store in it (runtime.ts), so each atomic
 * operation a plugin test drives is checked at its real call site, without a cluster.
 */
import { keySlot } from "../../adapters/kv-redis/slot.ts";
import { clusterKey } from "../../core/stores/hash-tags.ts";
import type { AtomicOp, KvReply, KvStore } from "../../core/stores/kv.ts";

/** Throws the error a cluster would give when `keys` do not share a slot. */
export function assertOneSlot(what: string, keys: readonly string[]): void {
  const slots = new Set(keys.map((key) => keySlot(clusterKey(key))));
  if (slots.size > 1) {
    throw new Error(
      `CROSSSLOT ${what}: keys in ${slots.size} hash slots on a Redis Cluster: ${
        keys.map((key) => `${clusterKey(key)} (${keySlot(clusterKey(key))})`).join(", ")
      }`,
    );
  }
}

export function slotChecked(kv: KvStore): KvStore {
  return new Proxy(kv, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      switch (name) {
        case "run":
          return <R extends KvReply>(op: AtomicOp<R>, keys: string[], args: (string | number)[]) => {
            assertOneSlot(op.name, [...keys, ...(op.keyArgs ?? []).map((i) => `${args[i]}x`)]);
            return target.run(op, keys, args);
          };
        case "mget":
          return (keys: string[]) => {
            assertOneSlot("MGET", keys);
            return target.mget(keys);
          };
        case "del":
          return (...keys: string[]) => {
            assertOneSlot("DEL", keys);
            return target.del(...keys);
          };
        case "move":
          return (from: string, to: string, ...rest: Parameters<KvStore["move"]> extends [string, string, ...infer T] ? T : never) => {
            assertOneSlot("LMOVE", [from, to]);
            return target.move(from, to, ...rest);
          };
        default:
          return (value as (...args: unknown[]) => unknown).bind(target);
      }
    },
  });
}
