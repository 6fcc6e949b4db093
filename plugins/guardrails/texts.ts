/**
 * The texts a model reads or writes, in a chat-completions body: message contents (strings and
 * text parts; system prompts and tool results are messages too), tool call arguments, and the
 * `input` / `prompt` of embeddings and completions. Images, audio and files are not read
 * (docs/guardrails.md#what-is-inspected). `write` returns a copy with the texts replaced.
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { noteDerivedText } from "../../core/llm/json-text.ts";

type Holder = Record<string | number, unknown>;
/** Where a text sits: the keys from the body down to it. */
type Path = ReadonlyArray<string | number>;

const at = (holder: unknown, key: string | number) => (holder as Holder)[key];

function slot(holder: unknown, path: Path, key: string | number, paths: Path[]): void {
  if (typeof at(holder, key) === "string") paths.push([...path, key]);
}

/** A `content` string, or its text parts. */
function contentSlots(holder: Record<string, unknown>, path: Path, paths: Path[]): void {
  const content = holder.content;
  if (typeof content === "string") paths.push([...path, "content"]);
  else if (Array.isArray(content)) {
    content.forEach((part, i) => {
      if (isRecord(part) && (part.type === "text" || part.type === undefined)) slot(part, [...path, "content", i], "text", paths);
    });
  }
}

function toolCallSlots(message: Record<string, unknown>, path: Path, paths: Path[]): void {
  if (!Array.isArray(message.tool_calls)) return;
  message.tool_calls.forEach((call, i) => {
    if (isRecord(call) && isRecord(call.function)) slot(call.function, [...path, "tool_calls", i, "function"], "arguments", paths);
  });
}

function stringsOf(body: Record<string, unknown>, key: string, paths: Path[]): void {
  const value = body[key];
  if (typeof value === "string") paths.push([key]);
  else if (Array.isArray(value)) value.forEach((_, i) => slot(value, [key], i, paths));
}

function requestPaths(body: JsonObject): Path[] {
  const paths: Path[] = [];
  if (Array.isArray(body.messages)) {
    body.messages.forEach((message, i) => {
      if (!isRecord(message)) return;
      contentSlots(message, ["messages", i], paths);
      toolCallSlots(message, ["messages", i], paths);
    });
  }
  stringsOf(body, "input", paths);
  stringsOf(body, "prompt", paths);
  return paths;
}

function answerPaths(body: JsonObject): Path[] {
  const paths: Path[] = [];
  if (!Array.isArray(body.choices)) return paths;
  body.choices.forEach((choice, i) => {
    if (!isRecord(choice)) return;
    if (isRecord(choice.message)) {
      contentSlots(choice.message, ["choices", i, "message"], paths);
      toolCallSlots(choice.message, ["choices", i, "message"], paths);
    }
    slot(choice, ["choices", i], "text", paths);
  });
  return paths;
}

export interface BodyTexts {
  readonly texts: string[];
  /**
   * A copy of the body with `texts` (same order) in place of its texts. Only the objects and
   * arrays on the way to a changed text are copied; the rest is shared with the body, which
   * stays as it was. `masksOnly`: each changed text is its original with masks that need no
   * escape (`ChangedTexts.masksOnly`), noted for the body's writer (core/llm/json-text.ts).
   */
  write(texts: readonly string[], masksOnly?: boolean): JsonObject;
}

function bodyTexts(body: JsonObject, pathsOf: (body: JsonObject) => Path[]): BodyTexts {
  const paths = pathsOf(body);
  const texts = paths.map((path) => path.reduce<unknown>(at, body) as string);
  return {
    texts,
    write(next, masksOnly = false) {
      const copies = new Map<unknown, Holder>();
      const copyOf = (value: unknown, holdsNote: boolean): Holder => {
        let copy = copies.get(value);
        if (!copy) {
          // A spread copy is the cheapest, but V8 (Node 20) adds a property to one in ~0.5 µs: the
          // holder of a noted text (noteDerivedText adds one) is copied with Object.assign instead.
          copy = (Array.isArray(value) ? [...value] : holdsNote ? Object.assign({}, value) : { ...(value as Holder) }) as Holder;
          copies.set(value, copy);
        }
        return copy;
      };
      const root = copyOf(body, false);
      paths.forEach((path, i) => {
        if (next[i] === texts[i]) return;
        let original: unknown = body;
        let copy = root;
        const steps = path.length - 1;
        for (let step = 0; step < steps; step++) {
          original = at(original, path[step]);
          copy = copy[path[step]] = copyOf(original, masksOnly && step === steps - 1);
        }
        const key = path[path.length - 1];
        copy[key] = next[i];
        if (masksOnly) noteDerivedText(copy, key, next[i], texts[i]);
      });
      return root as JsonObject;
    },
  };
}

export const requestTexts = (body: JsonObject): BodyTexts => bodyTexts(body, requestPaths);
export const answerTexts = (body: JsonObject): BodyTexts => bodyTexts(body, answerPaths);
