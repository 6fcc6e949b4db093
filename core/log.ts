/** One JSON object per line: easy to ship, grep and parse. */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

/** A line as written, for taps: its own keys, and the rest (base and call fields, errors flattened). */
export interface LogEntry {
  /** Epoch ms. */
  time: number;
  level: LogLevel;
  event: string;
  fields: LogFields;
}

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  /**
   * Hands every line written from now on to `listener` too, synchronously (so it runs in
   * the caller's async context), whichever logger of the family (a logger made by
   * `createLogger` and all its children) writes it. Returns the function that detaches it.
   * For exporting logs elsewhere (OTLP); a throwing listener is ignored, and lines written
   * by a listener are not handed to listeners again.
   */
  tap(listener: (entry: LogEntry) => void): () => void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function serializable(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    out[key] = value instanceof Error ? { message: value.message, name: value.name } : value;
  }
  return out;
}

export function createLogger(
  options: { level?: LogLevel; write?: (line: string) => void; now?: () => number; base?: LogFields } = {},
): Logger {
  const minimum = ORDER[options.level ?? "info"];
  const write = options.write ?? ((line: string) => console.log(line));
  const now = options.now ?? Date.now;
  const listeners = new Set<(entry: LogEntry) => void>();
  let tapping = false;
  const tap = (entry: LogEntry) => {
    tapping = true;
    try {
      for (const listener of listeners) {
        try {
          listener(entry);
        } catch {
          // A failing export must not fail the code that logged.
        }
      }
    } finally {
      tapping = false;
    }
  };
  const build = (base: LogFields): Logger => {
    const emit = (level: LogLevel, event: string, fields: LogFields = {}) => {
      if (ORDER[level] < minimum) return;
      const time = now();
      // The line's own keys come first and cannot be overwritten by a field of the same name.
      const own = { time: new Date(time).toISOString(), level, event };
      const { time: _time, level: _level, event: _event, ...rest } = { ...base, ...serializable(fields) };
      write(JSON.stringify({ ...own, ...rest }));
      if (listeners.size > 0 && !tapping) tap({ time, level, event, fields: rest });
    };
    return {
      debug: (event, fields) => emit("debug", event, fields),
      info: (event, fields) => emit("info", event, fields),
      warn: (event, fields) => emit("warn", event, fields),
      error: (event, fields) => emit("error", event, fields),
      child: (fields) => build({ ...base, ...fields }),
      tap(listener) {
        // A wrapper per call, so tapping the same function twice detaches independently.
        const entry = (e: LogEntry) => listener(e);
        listeners.add(entry);
        return () => listeners.delete(entry);
      },
    };
  };
  return build(options.base ?? {});
}

/** For tests and embedding: drops everything. */
export const silentLogger: Logger = createLogger({ write: () => {} });
