import { describe, expect, it } from "vitest";
import { chatToGeminiRequest, SKIP_THOUGHT_SIGNATURE } from "../../../plugins/provider-gemini/chat-to-gemini.ts";

const user = (content: unknown) => ({ role: "user", content });

describe("gemini request translation: messages", () => {
  it("moves system and developer messages (and a system field) into systemInstruction, users and assistants into contents", () => {
    const out = chatToGeminiRequest({
      model: "gemini-2.5-flash",
      system: "From the field.",
      messages: [
        { role: "system", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] },
        { role: "developer", content: "C" },
        user("hi"),
        { role: "assistant", content: "hello" },
        user([{ type: "text", text: "again" }]),
      ],
    });
    expect(out).toEqual({
      systemInstruction: { parts: [{ text: "From the field." }, { text: "AB" }, { text: "C" }] },
      contents: [
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ text: "hello" }] },
        { role: "user", parts: [{ text: "again" }] },
      ],
    });
  });

  it("never sends model, stream, stream_options, user or other fields Gemini refuses", () => {
    const out = chatToGeminiRequest({
      model: "m",
      stream: true,
      stream_options: { include_usage: true },
      user: "u",
      metadata: { a: "b" },
      logprobs: true,
      parallel_tool_calls: false,
      messages: [user("hi")],
    });
    expect(Object.keys(out)).toEqual(["contents"]);
  });

  it("joins consecutive turns of the same role (Gemini alternates user and model)", () => {
    const out = chatToGeminiRequest({ messages: [user("a"), user("b"), { role: "assistant", content: "c" }, { role: "assistant", content: "" }] });
    expect(out.contents).toEqual([
      { role: "user", parts: [{ text: "a" }, { text: "b" }] },
      { role: "model", parts: [{ text: "c" }] },
    ]);
  });

  it("turns images into inlineData (data: URLs) or fileData (https/gs URLs with a known type), audio and files into inlineData", () => {
    const out = chatToGeminiRequest({
      messages: [
        user([
          { type: "text", text: "what is it?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          { type: "image_url", image_url: { url: "https://example.test/a.JPG?size=2" } },
          { type: "image_url", image_url: { url: "gs://bucket/b.webp" } },
          { type: "input_audio", input_audio: { data: "UklG", format: "wav" } },
          { type: "file", file: { file_data: "data:application/pdf;base64,JVBE", filename: "a.pdf" } },
        ]),
      ],
    });
    expect(out.contents).toEqual([
      {
        role: "user",
        parts: [
          { text: "what is it?" },
          { inlineData: { mimeType: "image/png", data: "AAAA" } },
          { fileData: { mimeType: "image/jpeg", fileUri: "https://example.test/a.JPG?size=2" } },
          { fileData: { mimeType: "image/webp", fileUri: "gs://bucket/b.webp" } },
          { inlineData: { mimeType: "audio/wav", data: "UklG" } },
          { inlineData: { mimeType: "application/pdf", data: "JVBE" } },
        ],
      },
    ]);
  });

  it("refuses what Gemini cannot take, saying where and what to send instead", () => {
    const image = (url: string) => chatToGeminiRequest({ messages: [user([{ type: "image_url", image_url: { url } }])] });
    expect(() => image("http://example.test/a.png")).toThrow(
      /^messages\[0\]\.content\[0\]: Gemini takes a file as a base64 data: URL .* or an https:\/\/ or gs:\/\/ URL ending in \.png/,
    );
    expect(() => image("https://example.test/picture")).toThrow('not "https://example.test/picture"');
    expect(() => chatToGeminiRequest({ messages: [user([{ type: "input_audio", input_audio: { data: "x", format: "flac" } }])] })).toThrow(
      'messages[0].content[0]: an input_audio part needs input_audio.data (base64) and input_audio.format "wav" or "mp3"',
    );
    expect(() => chatToGeminiRequest({ messages: [user([{ type: "file", file: { file_id: "file-1" } }])] })).toThrow("file ids belong to another API");
    expect(() => chatToGeminiRequest({ messages: [user([{ type: "video", video: {} }])] })).toThrow('part type "video" has no Gemini equivalent');
    expect(() => chatToGeminiRequest({ messages: [{ role: "function", content: "x" }] })).toThrow('messages[0]: role "function" has no Gemini equivalent');
    expect(() => chatToGeminiRequest({ messages: "nope" })).toThrow("messages must be an array");
  });
});

describe("gemini request translation: tools", () => {
  const tools = [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, additionalProperties: false },
      },
    },
    { type: "function", function: { name: "now" } },
    { googleSearch: {} },
  ];

  it("declares functions with their JSON Schema as parametersJsonSchema and keeps Gemini's own tools", () => {
    expect(chatToGeminiRequest({ messages: [user("hi")], tools }).tools).toEqual([
      {
        functionDeclarations: [
          {
            name: "get_weather",
            description: "Weather",
            parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, additionalProperties: false },
          },
          { name: "now" },
        ],
      },
      { googleSearch: {} },
    ]);
    expect(() => chatToGeminiRequest({ messages: [], tools: [{ type: "web_search" }] })).toThrow(
      'tools[0]: tool type "web_search" has no Gemini equivalent; use "function"',
    );
  });

  it("maps every tool_choice form to functionCallingConfig", () => {
    const choice = (tool_choice: unknown) => chatToGeminiRequest({ messages: [], tool_choice }).toolConfig;
    expect(choice("auto")).toEqual({ functionCallingConfig: { mode: "AUTO" } });
    expect(choice("none")).toEqual({ functionCallingConfig: { mode: "NONE" } });
    expect(choice("required")).toEqual({ functionCallingConfig: { mode: "ANY" } });
    expect(choice({ type: "function", function: { name: "now" } })).toEqual({ functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["now"] } });
    expect(choice(undefined)).toBeUndefined();
    expect(() => choice("sometimes")).toThrow(
      '"tool_choice" must be "auto", "none", "required" or {"type":"function","function":{"name":...}}, not "sometimes"',
    );
  });

  it("sends tool calls as functionCall parts with their thought signature, and results as functionResponse parts named after their call", () => {
    const out = chatToGeminiRequest({
      messages: [
        user("weather in Paris and Rome?"),
        {
          role: "assistant",
          content: "Let me look.",
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
              extra_content: { google: { thought_signature: "sig-1" } },
            },
            { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"temp":20}' },
        { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "sunny" }] },
      ],
    });
    expect(out.contents).toEqual([
      { role: "user", parts: [{ text: "weather in Paris and Rome?" }] },
      {
        role: "model",
        parts: [
          { text: "Let me look." },
          { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "sig-1" },
          { functionCall: { name: "get_weather", args: { city: "Rome" } } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "get_weather", response: { temp: 20 } } },
          { functionResponse: { name: "get_weather", response: { output: "sunny" } } },
        ],
      },
    ]);
  });

  it("gives a turn of calls without any signature Google's placeholder on its first call", () => {
    const out = chatToGeminiRequest({
      messages: [user("x"), {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "a", function: { name: "f", arguments: "" } }, { id: "b", function: { name: "g", arguments: "{}" } }],
      }],
    });
    expect(out.contents).toEqual([
      { role: "user", parts: [{ text: "x" }] },
      {
        role: "model",
        parts: [{ functionCall: { name: "f", args: {} }, thoughtSignature: SKIP_THOUGHT_SIGNATURE }, { functionCall: { name: "g", args: {} } }],
      },
    ]);
  });

  it("refuses a result it cannot name and arguments that are not a JSON object", () => {
    expect(() => chatToGeminiRequest({ messages: [{ role: "tool", tool_call_id: "nope", content: "x" }] })).toThrow(
      'messages[0]: tool_call_id "nope" matches no earlier assistant tool call; Gemini needs the function\'s name for a result',
    );
    // A legacy `name` on the tool message is enough.
    expect(chatToGeminiRequest({ messages: [{ role: "tool", tool_call_id: "nope", name: "f", content: "x" }] }).contents).toEqual([
      { role: "user", parts: [{ functionResponse: { name: "f", response: { output: "x" } } }] },
    ]);
    const call = (args: string) =>
      chatToGeminiRequest({ messages: [{ role: "assistant", tool_calls: [{ id: "a", function: { name: "f", arguments: args } }] }] });
    expect(() => call("{bad")).toThrow("messages[0].tool_calls[0].function.arguments is not valid JSON");
    expect(() => call("[1]")).toThrow("messages[0].tool_calls[0].function.arguments must be a JSON object, not [1]");
  });
});

describe("gemini request translation: generationConfig", () => {
  it("maps the sampling fields, preferring max_completion_tokens", () => {
    const out = chatToGeminiRequest({
      messages: [],
      max_tokens: 9,
      max_completion_tokens: 7,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      seed: 3,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      stop: "END",
      n: 2,
    });
    expect(out.generationConfig).toEqual({
      maxOutputTokens: 7,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      seed: 3,
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
      stopSequences: ["END"],
      candidateCount: 2,
    });
    expect(chatToGeminiRequest({ messages: [], max_tokens: 9, stop: ["a", "b"] }).generationConfig).toEqual({ maxOutputTokens: 9, stopSequences: ["a", "b"] });
    expect(chatToGeminiRequest({ messages: [] }).generationConfig).toBeUndefined();
  });

  it("maps response_format to responseMimeType and responseJsonSchema", () => {
    const format = (response_format: unknown) => chatToGeminiRequest({ messages: [], response_format }).generationConfig;
    expect(format({ type: "text" })).toBeUndefined();
    expect(format({ type: "json_object" })).toEqual({ responseMimeType: "application/json" });
    const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false };
    expect(format({ type: "json_schema", json_schema: { name: "x", strict: true, schema } })).toEqual({
      responseMimeType: "application/json",
      responseJsonSchema: schema,
    });
    expect(() => format({ type: "json_schema", json_schema: { name: "x" } })).toThrow(
      '"response_format" of type json_schema needs json_schema.schema (an object)',
    );
    expect(() => format({ type: "yaml" })).toThrow('"response_format.type" must be text, json_object or json_schema, not "yaml"');
  });

  it("refuses fields of the wrong type, naming the field and what it must be; null is not set", () => {
    expect(() => chatToGeminiRequest({ messages: [], stop: 5 })).toThrow('"stop" must be a string or an array of strings, not 5');
    expect(() => chatToGeminiRequest({ messages: [], max_tokens: 0 })).toThrow('"max_tokens" must be a positive integer, not 0');
    expect(() => chatToGeminiRequest({ messages: [], n: 1.5 })).toThrow('"n" must be a positive integer, not 1.5');
    expect(() => chatToGeminiRequest({ messages: [], temperature: "hot" })).toThrow('"temperature" must be a number, not "hot"');
    expect(() => chatToGeminiRequest({ messages: [], seed: 0.5 })).toThrow('"seed" must be an integer, not 0.5');
    expect(chatToGeminiRequest({ messages: [], stop: null, max_tokens: null, temperature: null, n: null })).toEqual({ contents: [] });
  });
});
