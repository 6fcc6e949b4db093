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

const ROLE = '"role":"assistant",';
const DELTA = '"delta":{';
const CHOICES = '"choices":[{"index":';
/** The keys the checks below count, found in one scan (an `indexOf` each, twice, read the chunk eight times). */
const KEYS = /"(?:content|delta|index|finish_reason)":/g;
/** The rest of a JSON string literal after its opening quote, up to and with its closing quote. */
const STRING_REST = /(?:[^"\\]|\\.)*"/y;

/** Where `data`'s one `delta.content` string is, or undefined when `data` is not such a chunk. */
export function contentSpan(data: string): ContentSpan | undefined {
  if (data.charCodeAt(0) !== 123) return undefined;
  // Where each key's quote is; a key found twice: not such a chunk.
  let content = -1;
  let delta = -1;
  let index = -1;
  let finish = -1;
  KEYS.lastIndex = 0;
  while (KEYS.test(data)) {
    const end = KEYS.lastIndex;
    // The key's last letter, before its closing quote and colon.
    switch (data.charCodeAt(end - 3)) {
      case 116: // content
        if (content !== -1) return undefined;
        content = end - 10;
        break;
      case 97: // delta
        if (delta !== -1) return undefined;
        delta = end - 8;
        break;
      case 120: // index
        if (index !== -1) return undefined;
        index = end - 8;
        break;
      default: // finish_reason
        if (finish !== -1) return undefined;
        finish = end - 16;
    }
  }
  // The content is a string, right after `"delta":{` or after `"delta":{"role":"assistant",`.
  if (content === -1 || data.charCodeAt(content + 10) !== 34) return undefined;
  if (delta !== content - DELTA.length && !(delta === content - DELTA.length - ROLE.length && data.startsWith(ROLE, content - ROLE.length))) return undefined;
  if (!data.startsWith(DELTA, delta)) return undefined;
  // `"choices":[{"index":N,` right before the delta, with the chunk's only `"index":`.
  const comma = delta - 1;
  if (data.charCodeAt(comma) !== 44) return undefined;
  let digits = comma;
  while (digits > 0 && data.charCodeAt(digits - 1) >= 48 && data.charCodeAt(digits - 1) <= 57) digits--;
  if (digits === comma || comma - digits > 6) return undefined;
  const choices = digits - CHOICES.length;
  if (index !== choices + CHOICES.length - '"index":'.length || !data.startsWith(CHOICES, choices)) return undefined;
  // The choice is not finished: its only finish reason is null.
  if (finish === -1 || !data.startsWith("null", finish + 16)) return undefined;
  const start = content + 10;
  STRING_REST.lastIndex = start + 1;
  if (!STRING_REST.test(data)) return undefined;
  const end = STRING_REST.lastIndex;
  // The delta holds nothing after its content.
  if (data.charCodeAt(end) !== 125) return undefined;
  return { index: Number(data.slice(digits, comma)), start, end };
}
