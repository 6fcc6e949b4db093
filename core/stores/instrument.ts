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
  const failed = (op: string, error: unknown) => {
    // A put whose body failed (an oversize or interrupted upload) is the caller's failure, not the store's.
    if (isBodyError(error)) return;
    counter.inc({ op });
    log.warn("store_error", { store: metricName, op, error });
  };
  const target = store as Record<PropertyKey, unknown>;
  // The store's methods wrapped once, on an object that inherits everything else from the
  // store (a Proxy ran its get trap on every call). Each call looks the method up again, so a
  // method replaced on the store later (a test's failing `run`) is the one called.
  const wrapped = Object.create(store) as Record<PropertyKey, unknown>;
  for (const property of methodsOf(store)) {
    const op = String(property);
    const method = (args: unknown[]) => (target[property] as (...args: unknown[]) => unknown).apply(store, args);
    if (property === "list") {
      // list is an async iterable: wrap iteration so a failing page is counted too.
      wrapped.list = (...args: unknown[]) => countIteration(method(args) as AsyncIterable<unknown>, () => failed("list", undefined));
      continue;
    }
    const countFailure = (error: unknown) => {
      failed(op, error);
      throw error;
    };
    wrapped[property] = (...args: unknown[]) => {
      try {
        const result = method(args);
        return result instanceof Promise ? result.catch(countFailure) : result;
      } catch (error) {
        failed(op, error);
        throw error;
      }
    };
  }
  return wrapped as T;
}

/** The methods of an object: its own and its classes' (getters are left alone). */
function methodsOf(store: object): Set<PropertyKey> {
  const found = new Set<PropertyKey>();
  for (let level: object | null = store; level !== null && level !== Object.prototype; level = Object.getPrototypeOf(level) as object | null) {
    for (const property of Reflect.ownKeys(level)) {
      if (property !== "constructor" && typeof Object.getOwnPropertyDescriptor(level, property)?.value === "function") found.add(property);
    }
  }
  return found;
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
