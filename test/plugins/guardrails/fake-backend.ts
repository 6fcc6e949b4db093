/**
 * An in-process fake chat-completions backend and guardrail checker, as the gateway's injected
 * fetch. The backend answers as OpenAI's Chat Completions API does (a `chat.completion` body
 * with `usage`; with `"stream": true` `chat.completion.chunk` events, the usage chunk with empty
 * `choices` when `stream_options.include_usage`, then `data: [DONE]`); the last user message
 * picks the answer: `[answer:TEXT]` answers TEXT, `[parts:A|B|...]` streams A, B, ... as the
 * content of one event each; `(at)` in them becomes `@` (so an address in the answer is not one
 * in the prompt, which an input rule would mask first). The checker (`http://checker/<verdict>`) answers `block`, `allow`,
 * or never (`hang`, until the request is aborted), and records what it got.
 */
type Json = Record<string, unknown>;

export interface FakeUpstream {
  fetch: typeof fetch;
  /** Bodies the backend received. */
  received: Json[];
  /** Bodies the checker received. */
  checked: Json[];
}

const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

function lastUserText(body: Json): string {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const last = [...messages].reverse().find((m) => m.role === "user");
  const content = last?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof (p as Json).text === "string" ? (p as Json).text : "")).join("");
  return "";
}

function chunk(model: string, delta: Json, finish: string | null): Json {
  return { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] };
}

function answerOf(body: Json): string[] {
  const text = lastUserText(body);
  const parts = /\[parts:([^\]]*)\]/.exec(text);
  if (parts) return parts[1].replaceAll("(at)", "@").split("|");
  const answer = /\[answer:([^\]]*)\]/.exec(text);
  return [answer ? answer[1].replaceAll("(at)", "@") : "echo"];
}

function backendAnswer(body: Json): Response {
  const model = String(body.model ?? "gpt");
  const parts = answerOf(body);
  if (body.stream !== true) {
    return Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: parts.join("") }, finish_reason: "stop" }],
      usage: USAGE,
    });
  }
  const events: unknown[] = [chunk(model, { role: "assistant", content: "" }, null)];
  for (const part of parts) events.push(chunk(model, { content: part }, null));
  events.push(chunk(model, {}, "stop"));
  if ((body.stream_options as Json | undefined)?.include_usage === true) {
    events.push({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model, choices: [], usage: USAGE });
  }
  const text = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
  return new Response(text, { headers: { "content-type": "text/event-stream" } });
}

export function fakeUpstream(): FakeUpstream {
  const received: Json[] = [];
  const checked: Json[] = [];
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const body = JSON.parse(await request.text()) as Json;
    if (url.host === "checker") {
      checked.push(body);
      const verdict = url.pathname.slice(1);
      if (verdict === "hang") {
        return await new Promise<Response>((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason)));
      }
      if (verdict === "block") return Response.json({ action: "block", reason: "the moderation service flagged it" });
      return Response.json({ action: "allow" });
    }
    received.push(body);
    return backendAnswer(body);
  };
  return { fetch: fetcher as typeof fetch, received, checked };
}
