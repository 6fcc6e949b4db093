/**
 * Counts and logs store errors by operation, for every store the gateway opens:
 * `svc_kv_store_errors_total{op}` and `svc_object_store_errors_total{op}`.
 * The error is rethrown unchanged; callers decide whether to fail open. A put that failed
 * because of its body (the caller's stream) is not counted.
 */
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { KvStore } from "./kv.ts";
import type { ObjectStore } from "./objects.ts";
import { isBodyError } from "./streams.ts";

function instrument<T extends object>(store: T, metricName: string, help: string, metrics: Metrics, log: Logger): T {
  const counter = metrics.counter({ name: metricName, help, labelNames: ["op"] });
  const wrapped = new Map<PropertyKey, unknown>();
  const failed = (op: string, error: unknown) => {
    // A put whose body failed (an oversize or interrupted upload) is the caller's failure, not the store's.
    if (isBodyError(error)) return;
    counter.inc({ op });
    log.warn("store_error", { store: metricName, op, error });
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function" || property === "list") {
        if (property === "list" && typeof value === "function") {
          // list is an async iterable: wrap iteration so a failing page is counted too.
          return (...args: unknown[]) => countIteration(value.apply(target, args) as AsyncIterable<unknown>, () => failed("list", undefined));
        }
        return value;
      }
      let fn = wrapped.get(property);
      if (!fn) {
        const op = String(property);
        fn = (...args: unknown[]) => {
          try {
            const result = value.apply(target, args);
            if (result instanceof Promise) return result.catch((error: unknown) => { failed(op, error); throw error; });
            return result;
          } catch (error) {
            failed(op, error);
            throw error;
          }
        };
        wrapped.set(property, fn);
      }
      return fn;
    },
  });
}

async function* countIteration<T>(source: AsyncIterable<T>, onError: () => void): AsyncIterable<T> {
  try {
    yield* source;
  } catch (error) {
    onError();
    throw error;
  }
}

export function instrumentKv(store: KvStore, metrics: Metrics, log: Logger): KvStore {
  return instrument(store, "svc_kv_store_errors_total", "Key-value store operations that failed, by operation", metrics, log);
}

export function instrumentObjects(store: ObjectStore, metrics: Metrics, log: Logger): ObjectStore {
  return instrument(store, "svc_object_store_errors_total", "Object store operations that failed, by operation", metrics, log);
}
