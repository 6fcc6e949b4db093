import { describe, expect, it } from "vitest";
import type { TranslatorContext } from "../../../core/llm/provider.ts";
import { chatToConverseRequest } from "../../../plugins/provider-bedrock/chat-to-converse.ts";
import { bedrockProvider } from "../../../plugins/provider-bedrock/index.ts";
import { bedrockModelUrl, bedrockRuntimeUrl, encodeModelId } from "../../../plugins/provider-bedrock/urls.ts";

const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };

describe("bedrock request translation (chat completions -> Converse)", () => {
  it("moves system and developer messages (and a system field) into system blocks, and text into turns", () => {
    const out = chatToConverseRequest({
      model: "anthropic.claude-3-5-haiku-20241022-v1:0",
      system: "From the field.",
      messages: [
        { role: "system", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] },
        { role: "developer", content: "C" },
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "text", text: "hello" }] },
        { role: "user", content: [{ type: "text", text: "again" }] },
      ],
    });
    expect(out).toEqual({
      system: [{ text: "From the field." }, { text: "A" }, { text: "B" }, { text: "C" }],
      messages: [
        { role: "user", content: [{ text: "hi" }] },
        { role: "assistant", content: [{ text: "hello" }] },
        { role: "user", content: [{ text: "again" }] },
      ],
    });
    // The model goes in the URL, never in the body.
    expect(out).not.toHaveProperty("model");
  });

  it("turns base64 data: URLs into image blocks and s3:// URLs into S3 locations", () => {
    const out = chatToConverseRequest({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is it?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            { type: "image_url", image_url: { url: "data:image/jpg;base64,/9j/4AAQ" } },
            { type: "image_url", image_url: { url: "s3://my-bucket/cats/cat.webp" } },
          ],
        },
      ],
    });
    expect(out.messages).toEqual([
      {
        role: "user",
        content: [
          { text: "what is it?" },
          { image: { format: "png", source: { bytes: "iVBORw0KGgo=" } } },
          { image: { format: "jpeg", source: { bytes: "/9j/4AAQ" } } },
          { image: { format: "webp", source: { s3Location: { uri: "s3://my-bucket/cats/cat.webp" } } } },
        ],
      },
    ]);
  });

  it("refuses images Bedrock cannot take, saying what to send instead", () => {
    const image = (url: string) => ({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }] });
    expect(() => chatToConverseRequest(image("https://example.test/a.png"))).toThrow(
      'messages[0].content[0]: Bedrock takes images as base64 data: URLs (data:image/png;base64,...) or s3:// locations, not "https://example.test/a.png"',
    );
    expect(() => chatToConverseRequest(image("data:image/tiff;base64,AAAA"))).toThrow(
      'messages[0].content[0]: Bedrock takes png, jpeg, gif or webp images, not "image/tiff"',
    );
    expect(() => chatToConverseRequest(image("s3://bucket/cat"))).toThrow(
      'messages[0].content[0]: an s3:// image needs a file name ending in .png, .jpeg, .gif or .webp, not "s3://bucket/cat"',
    );
  });

  it("translates tools, keeps tools already in the Converse shape, and every tool_choice form", () => {
    const tools = [
      {
        type: "function",
        function: {
          name: "weather",
          description: "The weather in a city",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      },
      { type: "function", function: { name: "now" } },
      { toolSpec: { name: "native", inputSchema: { json: { type: "object" } } } },
    ];
    const messages = [{ role: "user", content: "hi" }];
    expect(chatToConverseRequest({ messages, tools }).toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: "weather",
            description: "The weather in a city",
            inputSchema: { json: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
          },
        },
        { toolSpec: { name: "now", inputSchema: { json: { type: "object", properties: {} } } } },
        { toolSpec: { name: "native", inputSchema: { json: { type: "object" } } } },
      ],
    });
    const choice = (tool_choice: unknown) =>
      (chatToConverseRequest({ messages, tools, tool_choice }).toolConfig as { toolChoice?: unknown } | undefined)?.toolChoice;
    expect(choice("auto")).toEqual({ auto: {} });
    expect(choice("required")).toEqual({ any: {} });
    expect(choice({ type: "function", function: { name: "weather" } })).toEqual({ tool: { name: "weather" } });
    expect(choice(undefined)).toBeUndefined();
    // "none": Converse has no such choice; the tools are left out.
    expect(chatToConverseRequest({ messages, tools, tool_choice: "none" }).toolConfig).toBeUndefined();
    expect(() => chatToConverseRequest({ messages, tools, tool_choice: "sometimes" })).toThrow(
      '"tool_choice" must be "auto", "required", "none" or {"type":"function","function":{"name":...}}, not "sometimes"',
    );
  });

  it("sends tool calls as toolUse blocks and tool messages as toolResult blocks in one user turn", () => {
    const out = chatToConverseRequest({
      messages: [
        { role: "user", content: "weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
            { id: "call_2", type: "function", function: { name: "weather", arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
        { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "rain" }] },
        { role: "user", content: "thanks, and tomorrow?" },
      ],
      tools: [{ type: "function", function: { name: "weather" } }],
      tool_choice: "none",
    });
    expect(out.messages).toEqual([
      { role: "user", content: [{ text: "weather in Paris and Rome?" }] },
      {
        role: "assistant",
        content: [
          { toolUse: { toolUseId: "call_1", name: "weather", input: { city: "Paris" } } },
          { toolUse: { toolUseId: "call_2", name: "weather", input: { city: "Rome" } } },
        ],
      },
      // Turns alternate on Bedrock: the results and the next user message are one turn.
      {
        role: "user",
        content: [
          { toolResult: { toolUseId: "call_1", content: [{ text: "sunny" }] } },
          { toolResult: { toolUseId: "call_2", content: [{ text: "rain" }] } },
          { text: "thanks, and tomorrow?" },
        ],
      },
    ]);
    // With tool blocks in the conversation Bedrock requires toolConfig, even for "none".
    expect(out.toolConfig).toEqual({ tools: [{ toolSpec: { name: "weather", inputSchema: { json: { type: "object", properties: {} } } } }] });
  });

  it("maps stop, token limits, temperature and top_p into inferenceConfig and drops what Converse refuses", () => {
    const out = chatToConverseRequest({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stop: ["END", "STOP"],
      max_tokens: 100,
      max_completion_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      n: 1,
      stream: true,
      stream_options: { include_usage: true },
      response_format: { type: "json_object" },
      seed: 3,
      user: "u",
      parallel_tool_calls: false,
    });
    expect(out).toEqual({
      messages: [{ role: "user", content: [{ text: "hi" }] }],
      inferenceConfig: { maxTokens: 50, temperature: 0.2, topP: 0.9, stopSequences: ["END", "STOP"] },
    });
    expect(chatToConverseRequest({ messages: [], stop: "X", max_tokens: 9 }).inferenceConfig).toEqual({ maxTokens: 9, stopSequences: ["X"] });
    // Nothing set: no inferenceConfig at all (Bedrock's defaults apply).
    expect(chatToConverseRequest({ messages: [], stop: null, max_tokens: null, temperature: null })).toEqual({ messages: [] });
  });

  it("refuses fields of the wrong type, naming the field and what it must be", () => {
    expect(() => chatToConverseRequest({ messages: [], stop: 5 })).toThrow('"stop" must be a string or an array of strings, not 5');
    expect(() => chatToConverseRequest({ messages: [], max_tokens: 0 })).toThrow('"max_tokens" must be a positive integer, not 0');
    expect(() => chatToConverseRequest({ messages: [], max_completion_tokens: 1.5 })).toThrow('"max_completion_tokens" must be a positive integer, not 1.5');
    expect(() => chatToConverseRequest({ messages: [], temperature: "hot" })).toThrow('"temperature" must be a number, not "hot"');
    expect(() => chatToConverseRequest({ messages: "nope" })).toThrow("messages must be an array");
    expect(() => chatToConverseRequest({ messages: [{ role: "tool", content: "x" }] })).toThrow("messages[0]: a tool message needs tool_call_id");
    expect(() => chatToConverseRequest({ messages: [{ role: "function", content: "x" }] })).toThrow('messages[0]: role "function" has no Bedrock equivalent');
    expect(() => chatToConverseRequest({ messages: [{ role: "assistant", tool_calls: [{ id: "1", function: { name: "f", arguments: "{bad" } }] }] })).toThrow(
      "messages[0].tool_calls[0].function.arguments is not valid JSON",
    );
    expect(() => chatToConverseRequest({ messages: [{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }] })).toThrow(
      'messages[0].content[0]: Bedrock cannot take a "input_audio" part here; send text or image_url parts',
    );
  });

  it("leaves out blank text (Bedrock refuses it) and turns cache_control markers into cache points", () => {
    const out = chatToConverseRequest({
      messages: [
        { role: "system", content: [{ type: "text", text: "long instructions", cache_control: { type: "ephemeral" } }] },
        { role: "user", content: [{ type: "text", text: "  " }, { type: "text", text: "question", cache_control: { type: "ephemeral" } }] },
        { role: "assistant", content: "", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "" } }] },
      ],
      tools: [{ type: "function", function: { name: "f" }, cache_control: { type: "ephemeral" } }],
    });
    expect(out.system).toEqual([{ text: "long instructions" }, { cachePoint: { type: "default" } }]);
    expect(out.messages).toEqual([
      { role: "user", content: [{ text: "question" }, { cachePoint: { type: "default" } }] },
      { role: "assistant", content: [{ toolUse: { toolUseId: "c", name: "f", input: {} } }] },
    ]);
    expect(out.toolConfig).toEqual({
      tools: [{ toolSpec: { name: "f", inputSchema: { json: { type: "object", properties: {} } } } }, { cachePoint: { type: "default" } }],
    });
  });

  it("is what the provider's translator sends", () => {
    const translator = bedrockProvider.createTranslator(context);
    expect(translator.translateRequest?.({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 })).toEqual({
      messages: [{ role: "user", content: [{ text: "hi" }] }],
      inferenceConfig: { maxTokens: 3 },
    });
  });
});

describe("bedrock URLs", () => {
  it("builds the region's runtime endpoint and the model's Converse or ConverseStream path, encoded as the SDKs do", () => {
    expect(bedrockRuntimeUrl("eu-central-1")).toBe("https://bedrock-runtime.eu-central-1.amazonaws.com");
    expect(bedrockModelUrl({ modelId: "anthropic.claude-3-5-haiku-20241022-v1:0", stream: false, region: "us-east-1" })).toBe(
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
    );
    expect(bedrockModelUrl({ modelId: "us.meta.llama3-2-1b-instruct-v1:0", stream: true, region: "us-west-2" })).toBe(
      "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.meta.llama3-2-1b-instruct-v1%3A0/converse-stream",
    );
    // An ARN is one path segment.
    expect(encodeModelId("arn:aws:bedrock:us-east-1:123456789012:inference-profile/x(1)")).toBe(
      "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fx%281%29",
    );
    // An explicit endpoint wins over the region's.
    expect(bedrockModelUrl({ modelId: "m", stream: false, region: "us-east-1", baseUrl: "http://127.0.0.1:9/prefix/" })).toBe(
      "http://127.0.0.1:9/prefix/model/m/converse",
    );
  });

  it("refuses a region that is not one and a missing model, saying what to set", () => {
    expect(() => bedrockRuntimeUrl("useast1")).toThrow(
      '"useast1" is not an AWS region name: set the backend\'s region to one where Bedrock runs, e.g. "us-east-1"',
    );
    expect(() => bedrockModelUrl({ modelId: "", stream: false, region: "us-east-1" })).toThrow("a Bedrock request needs a model id: set the backend's model");
  });
});
