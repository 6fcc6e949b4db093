/**
 * Process warnings as log lines. Node prints a warning (`process.emitWarning`: a deprecation, a
 * library's notice such as the AWS SDK's multi-line NodeVersionSupportWarning on Node < 22) to
 * stderr as several plain-text lines; the gateway's output is JSON lines only, so the default
 * printer is removed (what `--no-warnings` does, without losing the warning) and each warning
 * becomes one `process_warning` line. `node:process` is the same object on Deno.
 */
import process from "node:process";
import type { Logger } from "../../core/log.ts";

export function logProcessWarnings(log: Logger): void {
  process.removeAllListeners("warning");
  process.on("warning", (warning: Error & { code?: string }) => {
    log.warn("process_warning", {
      name: warning.name,
      ...(warning.code ? { code: warning.code } : {}),
      // One line: the notice's own line breaks and blank lines collapsed.
      message: warning.message.replace(/\s+/g, " ").trim(),
    });
  });
}
