/**
 * Output rules on a streamed answer (docs/guardrails.md#streams), on its chat-completions
 * events. Matching rules (`regex`, `pii`) hold back only the last `stream_window` characters of
 * each choice's text (less when no match could start there is not known: the window is the
 * bound), so a value split over two events is still found; the rest goes out at once, masked.
 * A blocking match ends the stream before its text goes out. Checking rules (`http`, plugin
 * kinds) hold the events back until the text so far was checked: every `stream_check_every`
 * characters and at the end. Only `delta.content` is read; streamed tool call arguments pass.
 */
import { StreamRefused } from "../../core/llm/hooks.ts";
import type { ChatStreamFilter } from "../../core/llm/hooks.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { contentSpan } from "./chunk-text.ts";
import { masked } from "./matchers.ts";
import type { GuardrailBlocked } from "./refusal.ts";
import type { RequestRun } from "./run.ts";
import type { CompiledRule } from "./rules.ts";

const refusedStream = (refusal: GuardrailBlocked) => new StreamRefused(refusal.message, "guardrail_blocked", refusal.rule);

/** A cut at `at` that does not split a surrogate pair. */
function safeCut(text: string, at: number): number {
  if (at > 0 && at < text.length) {
    const code = text.charCodeAt(at - 1);
    if (code >= 0xd800 && code <= 0xdbff) return at - 1;
  }
  return at;
}

export class GuardedStream implements ChatStreamFilter {
  private readonly held = new Map<number, string>();
  /** The last chunk, parsed or as its text (read only when held text goes out in a chunk of its own). */
  private lastChunk: JsonObject | string | undefined;
  private readonly window: number;
  private readonly checkEvery: number;
  // Checking rules: events waiting for a check, events released, the text so far.
  private readonly waiting: unknown[] = [];
  private readonly released: unknown[] = [];
  private text = "";
  private unchecked = 0;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly run: RequestRun,
    private readonly matchers: readonly CompiledRule[],
    private readonly checkers: readonly CompiledRule[],
  ) {
    this.window = Math.max(0, ...matchers.map((rule) => rule.streamWindow));
    this.checkEvery = Math.min(...checkers.map((rule) => rule.streamCheckEvery));
  }

  event(data: unknown): unknown[] {
    const out = this.matched(data);
    return this.checkers.length === 0 ? out : this.gated(out);
  }

  /**
   * A chunk's raw text, when it is one whose text can be read without parsing it (chunk-text.ts)
   * and only matching rules apply: the text with the choice's content replaced by what goes out
   * now, the chunk itself when that is unchanged. Parsing and writing every chunk again was most
   * of what an output mask cost a stream.
   */
  eventText(data: string): string | undefined {
    if (this.checkers.length > 0 || this.matchers.length === 0) return undefined;
    const span = contentSpan(data);
    if (!span) return undefined;
    this.lastChunk = data;
    const piece = JSON.parse(data.slice(span.start, span.end)) as string;
    const out = this.feed(span.index, piece);
    return out === piece ? data : data.slice(0, span.start) + JSON.stringify(out) + data.slice(span.end);
  }

  end(): unknown[] {
    const out = this.flushAll();
    if (this.checkers.length === 0) return out;
    // Everything was checked by `settle(true)`; what the matchers still held goes with it.
    const all = [...this.released.splice(0), ...this.waiting.splice(0), ...out];
    return all;
  }

  settle(ending: boolean): Promise<void> | undefined {
    if (this.checkers.length === 0) return undefined;
    if (!ending) return this.checking;
    return (async () => {
      await this.checking;
      for (const item of this.flushAll()) this.hold(item);
      if (this.unchecked > 0 || this.waiting.length > 0) {
        this.unchecked = 0;
        await this.startCheck();
      }
    })();
  }

  // ---- matching rules -------------------------------------------------------------------

  private matched(data: unknown): unknown[] {
    if (data === "[DONE]") return [...this.flushAll(), data];
    if (!isRecord(data) || !Array.isArray(data.choices)) return [data];
    this.lastChunk = data;
    if (this.matchers.length === 0) return [data];
    for (const choice of data.choices) {
      if (!isRecord(choice)) continue;
      const index = typeof choice.index === "number" ? choice.index : 0;
      const delta = isRecord(choice.delta) ? choice.delta : undefined;
      if (delta && typeof delta.content === "string") delta.content = this.feed(index, delta.content);
      if (typeof choice.finish_reason === "string") {
        const rest = this.flush(index);
        if (rest !== "") {
          if (delta) delta.content = (typeof delta.content === "string" ? delta.content : "") + rest;
          else choice.delta = { content: rest };
        }
      }
    }
    return [data];
  }

  /** A choice's new text: what can go out now (masked), the rest held back. */
  private feed(index: number, piece: string): string {
    const text = (this.held.get(index) ?? "") + piece;
    this.refuseBlocked(text);
    let cut = Math.max(0, text.length - this.window);
    // A match across the cut is held back whole.
    for (let moved = true; moved && cut > 0;) {
      moved = false;
      for (const rule of this.matchers) {
        for (const match of rule.matcher!.find(text)) {
          if (match.start < cut && match.end > cut) {
            cut = match.start;
            moved = true;
          }
        }
      }
    }
    cut = safeCut(text, cut);
    this.held.set(index, text.slice(cut));
    return cut === 0 ? "" : this.masked(text.slice(0, cut));
  }

  private flush(index: number): string {
    const text = this.held.get(index) ?? "";
    this.held.delete(index);
    if (text === "") return "";
    this.refuseBlocked(text);
    return this.masked(text);
  }

  /** What every choice still holds, as chunks of its own (with the last chunk's id, created time and model). */
  private flushAll(): unknown[] {
    const out: unknown[] = [];
    const envelope = this.held.size > 0 ? this.envelope() : undefined;
    for (const index of [...this.held.keys()]) {
      const content = this.flush(index);
      if (content !== "") out.push({ ...envelope, choices: [{ index, delta: { content }, finish_reason: null }] });
    }
    return out;
  }

  private envelope(): JsonObject {
    const last = typeof this.lastChunk === "string" ? JSON.parse(this.lastChunk) as JsonObject : this.lastChunk;
    return last
      ? { id: last.id, object: last.object ?? "chat.completion.chunk", created: last.created, model: last.model }
      : { object: "chat.completion.chunk" };
  }

  private refuseBlocked(text: string): void {
    for (const rule of this.matchers) {
      if (rule.action === "block" && rule.matcher!.find(text).length > 0) throw refusedStream(this.run.blocked(rule, "output"));
    }
  }

  private masked(text: string): string {
    let current = text;
    for (const rule of this.matchers) {
      if (rule.action === "block") continue;
      const found = rule.matcher!.find(current);
      if (found.length === 0) continue;
      this.run.acted(rule, "output", rule.action);
      if (rule.action === "mask") current = masked(current, found);
    }
    return current;
  }

  // ---- checking rules -------------------------------------------------------------------

  private gated(out: unknown[]): unknown[] {
    for (const item of out) this.hold(item);
    if (this.unchecked >= this.checkEvery && !this.checking) {
      this.unchecked = 0;
      this.checking = this.startCheck().finally(() => (this.checking = undefined));
      // Awaited by `settle`; a stream the client left never awaits it.
      this.checking.catch(() => {});
    }
    return this.released.splice(0);
  }

  private hold(item: unknown): void {
    this.waiting.push(item);
    if (!isRecord(item) || !Array.isArray(item.choices)) return;
    for (const choice of item.choices) {
      const content = isRecord(choice) && isRecord(choice.delta) ? choice.delta.content : undefined;
      if (typeof content === "string") {
        this.text += content;
        this.unchecked += content.length;
      }
    }
  }

  /** Checks the text so far; the events held when it started are released when every rule lets it pass. */
  private async startCheck(): Promise<void> {
    const upTo = this.waiting.length;
    const texts = [this.text];
    for (const rule of this.checkers) {
      const verdict = await this.run.check(rule, "output", texts);
      if (verdict.action === "failed") {
        const refusal = this.run.failed(rule, "output", verdict.why);
        if (refusal) throw refusedStream(refusal);
        continue;
      }
      if (verdict.action === "allow") continue;
      if (rule.action === "log") {
        this.run.acted(rule, "output", "log", `the checker said ${verdict.action}`);
        continue;
      }
      // A streamed text already sent cannot be masked after the fact: a mask verdict refuses the rest.
      const reason = verdict.action === "block" ? verdict.reason : "the checker asked to mask text of a streamed answer, which cannot be masked once sent";
      throw refusedStream(this.run.blocked(rule, "output", reason));
    }
    this.released.push(...this.waiting.splice(0, upTo));
  }
}
