/**
 * Newline-delimited JSON streams (one object per line, as local model runtimes stream), parsed
 * once into the same `StreamEvent`s as SSE so translators see one shape whatever the framing.
 */
import type { StreamEvent } from "./events.ts";
import { parseJson } from "./json.ts";

export class NdjsonParser {
  private buffer = "";

  push(text: string): StreamEvent[] {
    this.buffer += text;
    const lines = this.buffer.split("\n");
    this.buffer = lines.pop() ?? "";
    return lines.flatMap((line) => this.event(line));
  }

  /** The stream ended: a last line without its newline still counts. */
  end(): StreamEvent[] {
    const rest = this.buffer;
    this.buffer = "";
    return this.event(rest);
  }

  private event(line: string): StreamEvent[] {
    const data = line.trim();
    return data === "" ? [] : [{ data, json: parseJson(data) }];
  }
}
