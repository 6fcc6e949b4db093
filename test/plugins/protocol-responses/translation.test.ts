/**
 * The Responses translators, one direction each: a request (with its conversation) to chat
 * completions, a chat answer to a Response (status, usage, items), a chat stream to Responses
 * events (order, sequence numbers, tool calls, the broken-off end), the shape check, input-item
 * pages, and the encryption of stored responses.
 */
import { describe, expect, it } from "vitest";
import { UntranslatableRequest } from "../../../core/llm/client-protocol.ts";
import type { OutEvent } from "../../../core/llm/events.ts";
import { ChatStreamToResponses } from "../../../plugins/protocol-responses/chat-stream-to-responses.ts";
import { inputItems } from "../../../plugins/protocol-responses/items.ts";
import { responsesToChatRequest } from "../../../plugins/protocol-responses/request-to-chat.ts";
import { chatToResponse, echoedSettings, type ResponseMeta } from "../../../plugins/protocol-responses/response.ts";
import { inputItemsPage } from "../../../plugins/protocol-responses/routes.ts";
import { sealerFor } from "../../../plugins/protocol-responses/sealed.ts";
import { responsesShapeProblem } from "../../../plugins/protocol-responses/shape.ts";

let counter = 0;
const newId = () => `00000000-0000-0000-0000-${String(++counter).padStart(12, "0")}`;
const meta: ResponseMeta = { id: "resp_1", createdAt: 1_700_000_000, model: "m", previousResponseId: null, store: true, settings: echoedSettings({}) };
const TOOL = { type: "function", name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} }, strict: true };

describe("Responses request -> chat completions", () => {
  it("maps instructions, every item kind, tools, tool_choice, limits and formats", () => {
    const stored = inputItems([{ role: "user", content: "weather? [tool]" }], newId);
    const input = [
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "function_call_output", call_id: "call_1", output: "sunny" },
      { type: "reasoning", id: "rs_1", summary: [] },
      { role: "developer", content: "Be kind." },
      { role: "user", content: [{ type: "input_text", text: "And this?" }, { type: "input_image", image_url: "https://example.com/a.png", detail: "low" }] },
      { role: "assistant", content: [{ type: "output_text", text: "Looking." }] },
    ];
    const chat = responsesToChatRequest(
      {
        model: "m",
        instructions: "Be brief.",
        stream: true,
        max_output_tokens: 50,
        temperature: 0.2,
        top_p: 0.9,
        user: "u-1",
        metadata: { a: "b" },
        tools: [TOOL],
        tool_choice: { type: "function", name: "get_weather" },
        parallel_tool_calls: false,
        text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
        reasoning: { effort: "low" },
      },
      [...stored, ...inputItems(input, newId)],
      stored.length,
    );
    expect(chat).toEqual({
      model: "m",
      stream: true,
      max_completion_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      user: "u-1",
      tools: [{ type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} }, strict: true } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      response_format: { type: "json_schema", json_schema: { name: "out", schema: { type: "object" }, strict: true } },
      reasoning_effort: "low",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "weather? [tool]" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
        { role: "system", content: "Be kind." },
        { role: "user", content: [{ type: "text", text: "And this?" }, { type: "image_url", image_url: { url: "https://example.com/a.png", detail: "low" } }] },
        { role: "assistant", content: "Looking." },
      ],
    });
  });

  it.each([
    [{ tools: [{ type: "web_search" }] }, "tools[0]: only function tools"],
    [{ input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] }, 'input[0].content[0]: a "input_file" part cannot be sent'],
    [{ input: [{ type: "item_reference", id: "msg_1" }] }, 'input[0]: a "item_reference" item cannot be sent'],
    [{ background: true }, '"background": true is not supported'],
    [{ text: { format: { type: "yaml" } } }, '"text.format" must be'],
  ])("refuses %j saying what to change", (extra, message) => {
    const body = { model: "m", input: "hi", ...extra };
    const translate = () => responsesToChatRequest(body, inputItems(body.input, newId));
    expect(translate).toThrow(UntranslatableRequest);
    expect(translate).toThrow(message);
  });
});

describe("chat-completions answer -> Response", () => {
  it("writes text and tool calls as items, usage in Responses counts", () => {
    const response = chatToResponse(
      {
        choices: [{
          finish_reason: "tool_calls",
          message: { content: "Let me look.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
        }],
        usage: { prompt_tokens: 10, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 1 } },
      },
      meta,
      newId,
    );
    expect(response).toMatchObject({
      id: "resp_1",
      object: "response",
      status: "completed",
      incomplete_details: null,
      output: [
        { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Let me look.", annotations: [] }] },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}", status: "completed" },
      ],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 3 },
        output_tokens: 4,
        output_tokens_details: { reasoning_tokens: 1 },
        total_tokens: 14,
      },
      tool_choice: "auto",
      tools: [],
    });
  });

  it("says incomplete with max_output_tokens when the backend stopped on its limit", () => {
    const response = chatToResponse({ choices: [{ finish_reason: "length", message: { content: "cut sh" } }] }, meta, newId);
    expect(response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, usage: null });
  });
});

describe("chat-completions stream -> Responses events", () => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
  const typesOf = (events: OutEvent[]) => events.map((e) => e.event);

  it("sends the lifecycle, text and tool-call events in order, numbered from 0, ending with the whole Response", () => {
    let done: Record<string, unknown> | undefined;
    const stream = new ChatStreamToResponses(meta, newId, (response) => (done = response));
    const events = [
      chunk({ role: "assistant", content: "Let " }),
      chunk({ content: "me look." }),
      chunk({ tool_calls: [{ index: 0, id: "call_1", function: { name: "get_weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      chunk({}, "tool_calls"),
      { choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } },
      "[DONE]",
    ].flatMap((data) => stream.event(data));
    expect(typesOf(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => (e.data as { sequence_number: number }).sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[6].data).toMatchObject({ text: "Let me look.", output_index: 0 });
    expect(events[12].data).toMatchObject({ arguments: '{"city":"Paris"}', name: "get_weather", output_index: 1 });
    expect(done).toMatchObject({
      status: "completed",
      output: [{ type: "message", content: [{ text: "Let me look." }] }, { type: "function_call", call_id: "call_1", arguments: '{"city":"Paris"}' }],
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
    });
    expect(stream.end()).toEqual([]);
  });

  it("ends a stream that broke off with error and response.failed, continuing the sequence, once", () => {
    let done = false;
    const stream = new ChatStreamToResponses(meta, newId, () => (done = true));
    const first = stream.event(chunk({ content: "Hel" }));
    const failed = stream.fail("the backend stream broke off");
    expect(typesOf(failed)).toEqual(["error", "response.failed"]);
    expect(failed.map((e) => (e.data as { sequence_number: number }).sequence_number)).toEqual([first.length, first.length + 1]);
    expect(failed[1].data).toMatchObject({ response: { status: "failed", error: { code: "server_error", message: "the backend stream broke off" } } });
    expect(stream.fail("again")).toEqual([]);
    expect(done).toBe(false);
  });
});

describe("the shape check", () => {
  it.each([
    [{ input: "hi" }, '"model" is required'],
    [{ model: "m", input: 42 }, '"input" must be a string or an array of input items'],
    [{ model: "m", input: [{ type: "telepathy" }] }, 'an item of type "telepathy" is not a Responses input item'],
    [{ model: "m", input: [{ content: "hi" }] }, 'input[0] needs a "type"'],
    [{ model: "m", input: [{ type: "function_call", name: "f" }] }, 'a function_call needs "call_id", "name" and "arguments"'],
    [{ model: "m", temperature: "hot" }, '"temperature" must be a number, not "hot"'],
  ])("refuses %j", (body, message) => {
    expect(responsesShapeProblem(body)).toContain(message);
  });

  it("takes a well-formed request, nulls as absent", () => {
    expect(responsesShapeProblem({ model: "m", input: [{ role: "user", content: "hi" }], temperature: null, tools: [TOOL] })).toBeUndefined();
  });
});

describe("input-item pages", () => {
  const items = ["a", "b", "c"].map((id) => ({ id, type: "message" }));
  it("pages newest first by default, oldest first with order=asc, after an id", () => {
    expect(inputItemsPage(items, { limit: "2" })).toEqual({ object: "list", data: [items[2], items[1]], first_id: "c", last_id: "b", has_more: true });
    expect(inputItemsPage(items, { order: "asc", after: "a" })).toEqual({
      object: "list",
      data: [items[1], items[2]],
      first_id: "b",
      last_id: "c",
      has_more: false,
    });
    expect(() => inputItemsPage(items, { limit: "0" })).toThrow('"limit" must be a whole number from 1 to 100');
  });
});

describe("stored responses at rest", () => {
  it("seals with the key (nothing of the text readable) and opens only with it", async () => {
    const sealer = sealerFor("ab".repeat(32));
    const sealed = await sealer.seal('{"text":"a secret"}');
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain("secret");
    expect(await sealer.open(sealed)).toBe('{"text":"a secret"}');
    await expect(sealerFor("cd".repeat(32)).open(sealed)).rejects.toThrow();
    expect(await sealerFor("").seal("plain")).toBe("plain");
  });
});
