/** One JSON object per line: easy to ship, grep and parse. */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
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
  const base = options.base ?? {};
  const emit = (level: LogLevel, event: string, fields: LogFields = {}) => {
    if (ORDER[level] < minimum) return;
    // The line's own keys come first and cannot be overwritten by a field of the same name.
    const own = { time: new Date(now()).toISOString(), level, event };
    write(JSON.stringify({ ...own, ...base, ...serializable(fields), ...own }));
  };
  return {
    debug: (event, fields) => emit("debug", event, fields),
    info: (event, fields) => emit("info", event, fields),
    warn: (event, fields) => emit("warn", event, fields),
    error: (event, fields) => emit("error", event, fields),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
  };
}

/** For tests and embedding: drops everything. */
export const silentLogger: Logger = createLogger({ write: () => {} });
