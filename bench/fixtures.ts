/**
 * The fixed bodies the mock backend answers with and the load generators send, in one place
 * so the backend, the generators and the validators agree byte for byte. Every scenario's
 * expected answer is known in advance: the gateway passes chat-completions answers through
 * unchanged, so a response that differs by one byte is counted as wrong.
 */

const CONTENT = "Benchmarks measure what they measure: here, the cost a gateway adds to one request on top of a backend that answers at once. " +
  "This fixed completion is long enough to look like a short real answer and short enough that the proxy, not the bytes, dominates.";

/** The non-streaming chat completion (~600 bytes) the mock returns for every JSON request. */
export const COMPLETION_JSON = JSON.stringify({
  id: "chatcmpl-bench-0000000000000001",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-model",
  system_fingerprint: "fp_bench",
  choices: [{ index: 0, message: { role: "assistant", content: CONTENT }, logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 42, completion_tokens: 87, total_tokens: 129 },
});

const WORDS = CONTENT.split(" ");
const STREAM_PIECES = 18;

function chunk(delta: Record<string, unknown>, finish: string | null, usage?: Record<string, number>): string {
  const body: Record<string, unknown> = {
    id: "chatcmpl-bench-stream",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "bench-model",
    choices: usage ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
  if (usage) body.usage = usage;
  return `data: ${JSON.stringify(body)}\n\n`;
}

/**
 * The SSE answer as the events the mock writes one by one (21 events + `[DONE]`): a role
 * delta, 18 content deltas, the finish, the usage chunk `include_usage` asks for.
 */
export const STREAM_EVENTS: readonly string[] = (() => {
  const events = [chunk({ role: "assistant", content: "" }, null)];
  const per = Math.ceil(WORDS.length / STREAM_PIECES);
  for (let i = 0; i < STREAM_PIECES; i++) events.push(chunk({ content: `${WORDS.slice(i * per, (i + 1) * per).join(" ")} ` }, null));
  events.push(chunk({}, "stop"));
  events.push(chunk({}, null, { prompt_tokens: 42, completion_tokens: 87, total_tokens: 129 }));
  events.push("data: [DONE]\n\n");
  return events;
})();

export const STREAM_TEXT = STREAM_EVENTS.join("");

/** The mock's answer to a multipart upload: how many bytes it drained. */
export function uploadAnswer(bytes: number): string {
  return JSON.stringify({ text: "transcribed", bytes });
}

/** A chat request; `tag` makes the body (and so the cache key) unique when set. */
export function chatRequest(model: string, options: { stream?: boolean; tag?: string } = {}): string {
  const body: Record<string, unknown> = {
    model,
    messages: [
      { role: "system", content: "You are a terse assistant used by a benchmark." },
      { role: "user", content: `Say something about proxies.${options.tag ? ` #${options.tag}` : ""}` },
    ],
    max_tokens: 128,
    temperature: 0,
  };
  if (options.stream) body.stream = true;
  return JSON.stringify(body);
}

export const MULTIPART_BOUNDARY = "----bench-boundary-7MA4YWxkTrZu0gW";

/** A multipart/form-data body with `model` and one `file` part of `size` bytes. */
export function multipartBody(model: string, size: number, filename = "input.wav"): Buffer {
  const head = Buffer.from(
    `--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n` +
      `--${MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n",
  );
  const tail = Buffer.from(`\r\n--${MULTIPART_BOUNDARY}--\r\n`);
  return Buffer.concat([head, Buffer.alloc(size, 0x61), tail]);
}

export const MULTIPART_TYPE = `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`;
