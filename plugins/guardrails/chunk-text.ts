/**
 * The text of a streamed answer's chunk read without parsing the chunk: where its one
 * `delta.content` string sits in the chunk's raw JSON text, for chunks written compactly in the
 * order OpenAI and the servers that copy it write them:
 *
 *   {"id":…,"choices":[{"index":0,"delta":{"content":"…"},"logprobs":null,"finish_reason":null}]}
 *
 * (`"role":"assistant"` may come before `content`). Any other chunk (spaced JSON, several
 * choices, a finish reason, tool calls, usage) is not read here: the stream filter parses it.
 *
 * Why this is exact: outside a JSON string every `"` is a delimiter, and inside one every `"` is
 * escaped, so a raw `"content":` (a quote right before the colon) is always a key, never text.
 * A chunk with exactly one `"content":`, one `"delta":`, one `"index":` and one `"finish_reason":`
 * has one choice, and the prefix `"choices":[{"index":N,"delta":{` puts that content at
 * `choices[0].delta.content`.
 */

export interface ContentSpan {
  /** The choice's `index`. */
  index: number;
  /** Where the content's JSON string literal starts (its opening quote) and ends (after its closing quote). */
  start: number;
  end: number;
}

const CONTENT = '"content":"';
const ROLE = '"role":"assistant",';
const DELTA = '"delta":{';
const CHOICES = '"choices":[{"index":';
const NOT_FINISHED = '"finish_reason":null';
/** The rest of a JSON string literal after its opening quote, up to and with its closing quote. */
const STRING_REST = /(?:[^"\\]|\\.)*"/y;

const once = (text: string, key: string, at: number) => text.indexOf(key) === at && text.indexOf(key, at + key.length) === -1;

/** Where `data`'s one `delta.content` string is, or undefined when `data` is not such a chunk. */
export function contentSpan(data: string): ContentSpan | undefined {
  if (data.charCodeAt(0) !== 123) return undefined;
  const content = data.indexOf(CONTENT);
  if (content === -1 || !once(data, '"content":', content)) return undefined;
  // `"delta":{` right before the content, or before `"role":"assistant",` before it.
  const delta = data.startsWith(DELTA, content - DELTA.length) ? content - DELTA.length : content - DELTA.length - ROLE.length;
  if (!data.startsWith(DELTA, delta) || (delta !== content - DELTA.length && !data.startsWith(ROLE, content - ROLE.length))) return undefined;
  if (!once(data, '"delta":', delta)) return undefined;
  // `"choices":[{"index":N,` right before the delta, with the chunk's only `"index":`.
  const comma = delta - 1;
  if (data.charCodeAt(comma) !== 44) return undefined;
  let digits = comma;
  while (digits > 0 && data.charCodeAt(digits - 1) >= 48 && data.charCodeAt(digits - 1) <= 57) digits--;
  if (digits === comma || comma - digits > 6) return undefined;
  const choices = digits - CHOICES.length;
  if (!data.startsWith(CHOICES, choices) || !once(data, '"index":', choices + CHOICES.length - '"index":'.length)) return undefined;
  // The choice is not finished: its only finish reason is null.
  const finish = data.indexOf(NOT_FINISHED);
  if (finish === -1 || !once(data, '"finish_reason":', finish)) return undefined;
  const start = content + CONTENT.length - 1;
  STRING_REST.lastIndex = start + 1;
  if (!STRING_REST.test(data)) return undefined;
  const end = STRING_REST.lastIndex;
  // The delta holds nothing after its content.
  if (data.charCodeAt(end) !== 125) return undefined;
  return { index: Number(data.slice(digits, comma)), start, end };
}
