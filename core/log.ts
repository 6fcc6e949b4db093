/**
 * One JSON object per line: easy to ship, grep and parse.
 *
 * Repeated warnings and errors are collapsed, so an outage cannot flood the log (a Redis
 * outage under load once wrote ~5,000 `limit_store_error` lines a second). A `warn` or
 * `error` line identical to one written less than `repeatWindowMs` (10 s) before (same level,
 * event and fields; only the time differs) is counted instead of written; when the window
 * ends, one summary line is written: the same line plus `"repeated": <occurrences held back>`
 * and `"repeated_since": <ISO time the window opened>`, and a new window opens if the line
 * keeps coming. A window that ends with nothing held back writes nothing, and the next
 * occurrence is written in full again. Lines that differ in any field (another job id,
 * another config key) are never merged; at most `MAX_REPEAT_WINDOWS` distinct lines are
 * tracked at once, and lines past that are written as they come. Metrics are not affected:
 * callers count every occurrence. `debug` and `info` lines (audit, job and delivery
 * records) are never collapsed.
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

/** Distinct lines tracked at once: a flood of lines that all differ costs bounded memory. */
export const MAX_REPEAT_WINDOWS = 1_000;

/** The open window of one repeated line: when it opened and how many occurrences were held back. */
interface RepeatWindow {
  level: LogLevel;
  event: string;
  fields: LogFields;
  opened: number;
  held: number;
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
    writeLine(window.level, window.event, time, { ...window.fields, repeated: window.held, repeated_since: new Date(window.opened).toISOString() });
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
    const key = `${level} ${event} ${JSON.stringify(rest)}`;
    const window = windows.get(key);
    if (window === undefined) {
      // First occurrence: written in full, and opens a window (unless too many are open).
      if (windows.size < MAX_REPEAT_WINDOWS) {
        windows.set(key, { level, event, fields: rest, opened: time, held: 0 });
        armSweep();
      }
      return false;
    }
    if (time - window.opened >= windowMs) {
      // The window ended before the sweep ran (a clock ahead of the timer).
      if (window.held === 0) {
        // Nothing repeated in it: written in full again, and a new window opens.
        window.opened = time;
        return false;
      }
      window.held++;
      summarize(window, time); // this occurrence closes the window, counted in its summary
      return true;
    }
    window.held++;
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
