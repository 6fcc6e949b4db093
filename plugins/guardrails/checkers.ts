/**
 * The checking kinds: an external `http` checker and the kinds plugins register. Either gives a
 * verdict on the texts, or fails (a timeout, an error, an answer that is not a verdict); what a
 * failure does is the rule's `failure` (run.ts).
 */
import { isRecord } from "../../core/llm/json.ts";
import type { GuardrailCheckContext, GuardrailKind, GuardrailVerdict } from "../../core/llm/guardrail-kinds.ts";

/** A verdict, or why the check failed. */
export type CheckResult = GuardrailVerdict | { action: "failed"; why: string };

export type Checker = (texts: readonly string[], context: GuardrailCheckContext) => Promise<CheckResult>;

/** `value` as a verdict on `count` texts, or undefined when it is not one. */
export function verdictOf(value: unknown, count: number): GuardrailVerdict | undefined {
  if (!isRecord(value)) return undefined;
  if (value.action === "allow") return { action: "allow" };
  if (value.action === "block") return { action: "block", ...(typeof value.reason === "string" ? { reason: value.reason } : {}) };
  if (value.action === "mask" && Array.isArray(value.texts) && value.texts.length === count && value.texts.every((t) => typeof t === "string")) {
    return { action: "mask", texts: value.texts as string[] };
  }
  return undefined;
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface HttpCheckerSettings {
  url: string;
  timeoutMs: number;
  headers: Readonly<Record<string, string>>;
}

/**
 * POSTs `{"stage","model","consumer","texts"}` and reads `{"action","reason","texts"}`. The URL
 * is the operator's, so loopback and private addresses are allowed, as a backend's are.
 */
export function httpChecker(fetcher: typeof fetch, settings: HttpCheckerSettings): Checker {
  return async (texts, context) => {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${settings.timeoutMs} ms`)), settings.timeoutMs);
    try {
      const response = await fetcher(settings.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...settings.headers },
        body: JSON.stringify({ stage: context.stage, model: context.model, consumer: context.consumer, texts }),
        signal: abort.signal,
      });
      const text = await response.text();
      if (response.status < 200 || response.status > 299) return { action: "failed", why: `the checker answered ${response.status}` };
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return { action: "failed", why: "the checker's answer is not JSON" };
      }
      return verdictOf(body, texts.length) ?? { action: "failed", why: 'the checker\'s answer is not a verdict ({"action":"allow"|"block"|"mask", ...})' };
    } catch (error) {
      if (abort.signal.aborted) return { action: "failed", why: `the checker did not answer within ${settings.timeoutMs} ms (timeout)` };
      return { action: "failed", why: `the checker could not be reached: ${describe(error)}` };
    } finally {
      clearTimeout(timer);
    }
  };
}

/** A plugin's kind: its verdict, sync or async; a throw or a non-verdict is a failed check. */
export function pluginChecker(kind: GuardrailKind): Checker {
  return async (texts, context) => {
    try {
      return verdictOf(await kind.check(texts, context), texts.length) ?? { action: "failed", why: `kind "${kind.name}" did not return a verdict` };
    } catch (error) {
      return { action: "failed", why: `kind "${kind.name}" failed: ${describe(error)}` };
    }
  };
}
