/**
 * One JSON object per line: easy to ship, grep and parse.
 *
 * Repeated warnings and errors are collapsed, so an outage cannot flood the log (a Redis
 * outage under load once wrote ~5,000 `limit_store_error` lines a second). Per level and
 * event name, the first line is written in full; the same event again within the next
 * `repeatWindowMs` (10 s) is only counted; when the window ends one summary line is written:
 * the latest occurrence's fields plus `"repeated": <occurrences it stands for>` and
 * `"repeated_since": <ISO time the window opened>`, and a new window opens if the event keeps
 * coming. A window that ends with nothing repeated writes nothing, and the next occurrence is
 * written in full again. Metrics are not affected: callers count every occurrence.
 * `debug` and `info` lines (audit, job and delivery records) are never collapsed.
 */

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

/** How long repeats of one warning or error are only counted before their summary line. */
export const REPEAT_WINDOW_MS = 10_000;

/** The open window of one repeated event: when it opened, how many occurrences were held back, the latest one's fields. */
interface RepeatWindow {
  level: LogLevel;
  event: string;
  opened: number;
  held: number;
  latest: LogFields;
}

export function createLogger(
  options: {
    level?: LogLevel;
    write?: (line: string) => void;
    now?: () => number;
    base?: LogFields;
    /** Collapse window for repeated warnings and errors, ms; 0 writes every line. */
    repeatWindowMs?: number;
  } = {},
): Logger {
  const minimum = ORDER[options.level ?? "info"];
  const write = options.write ?? ((line: string) => console.log(line));
  const now = options.now ?? Date.now;
  const windowMs = options.repeatWindowMs ?? REPEAT_WINDOW_MS;
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
  const writeLine = (level: LogLevel, event: string, time: number, rest: LogFields) => {
    // The line's own keys come first and cannot be overwritten by a field of the same name.
    write(JSON.stringify({ time: new Date(time).toISOString(), level, event, ...rest }));
    if (listeners.size > 0 && !tapping) tap({ time, level, event, fields: rest });
  };

  // One set of windows for the whole family, so children share them.
  const windows = new Map<string, RepeatWindow>();
  let sweepTimer: ReturnType<typeof setTimeout> | undefined;
  const summarize = (window: RepeatWindow, time: number) => {
    writeLine(window.level, window.event, time, { ...window.latest, repeated: window.held, repeated_since: new Date(window.opened).toISOString() });
    window.opened = time;
    window.held = 0;
  };
  // Writes the summaries of windows that have ended, so a count is not held until the event comes back.
  const sweep = () => {
    sweepTimer = undefined;
    const time = now();
    for (const [key, window] of windows) {
      if (time - window.opened < windowMs) continue;
      if (window.held > 0) summarize(window, time);
      else windows.delete(key);
    }
    armSweep();
  };
  const armSweep = () => {
    if (sweepTimer !== undefined || windows.size === 0) return;
    const firstEnd = Math.min(...[...windows.values()].map((window) => window.opened + windowMs));
    sweepTimer = setTimeout(sweep, Math.max(0, firstEnd - now()));
    // Never keeps a process alive (Node's timers have unref; elsewhere the process exits explicitly).
    (sweepTimer as { unref?: () => void }).unref?.();
  };
  const collapse = (level: LogLevel, event: string, time: number, rest: LogFields): boolean => {
    if (windowMs <= 0 || ORDER[level] < ORDER.warn) return false;
    const key = `${level} ${event}`;
    const window = windows.get(key);
    if (window === undefined || time - window.opened >= windowMs) {
      if (window === undefined || window.held === 0) {
        // First occurrence (or the first after a quiet window): written in full, opens a window.
        windows.set(key, { level, event, opened: time, held: 0, latest: rest });
        armSweep();
        return false;
      }
      // The window ended with repeats the sweep has not written yet: this occurrence closes it.
      window.held++;
      window.latest = rest;
      summarize(window, time);
      return true;
    }
    window.held++;
    window.latest = rest;
    return true;
  };

  const build = (base: LogFields): Logger => {
    const emit = (level: LogLevel, event: string, fields: LogFields = {}) => {
      if (ORDER[level] < minimum) return;
      const time = now();
      const { time: _time, level: _level, event: _event, ...rest } = { ...base, ...serializable(fields) };
      if (collapse(level, event, time, rest)) return;
      writeLine(level, event, time, rest);
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
export const silentLogger: Logger = createLogger({ write: () => {}, repeatWindowMs: 0 });
