import { describe, expect, it } from "vitest";
import type { TranslatorContext } from "../../../core/llm/provider.ts";
import { converseToChatError, errorName } from "../../../plugins/provider-bedrock/converse-errors.ts";
import { bedrockProvider, isContextWindowError } from "../../../plugins/provider-bedrock/index.ts";

const context: TranslatorContext = { stream: false, now: () => 0, newId: () => "id" };
const header = (name: string) => ({ "x-amzn-ErrorType": `${name}:http://internal.amazon.com/coral/com.amazon.bedrock/` });

describe("bedrock error translation", () => {
  it("names the error from x-amzn-ErrorType and maps it to the chat-completions type", () => {
    expect(converseToChatError(429, { message: "Too many requests, please wait before trying again." }, header("ThrottlingException"))).toEqual({
      error: {
        message: "Too many requests, please wait before trying again. (Bedrock ThrottlingException)",
        type: "rate_limit_error",
        code: "ThrottlingException",
      },
    });
    const type = (status: number, name: string) => (converseToChatError(status, { message: "m" }, header(name)).error as { type: string }).type;
    expect(type(400, "ValidationException")).toBe("invalid_request_error");
    expect(type(400, "ServiceQuotaExceededException")).toBe("rate_limit_error");
    expect(type(403, "AccessDeniedException")).toBe("permission_error");
    expect(type(403, "UnrecognizedClientException")).toBe("authentication_error");
    expect(type(403, "InvalidSignatureException")).toBe("authentication_error");
    expect(type(404, "ResourceNotFoundException")).toBe("not_found_error");
    expect(type(429, "ModelNotReadyException")).toBe("backend_error");
    expect(type(408, "ModelTimeoutException")).toBe("backend_error");
    expect(type(424, "ModelErrorException")).toBe("backend_error");
    expect(type(503, "ServiceUnavailableException")).toBe("backend_error");
    expect(type(500, "InternalServerException")).toBe("backend_error");
    // An error Bedrock may add later: typed by its status.
    expect(type(409, "SomethingNewException")).toBe("invalid_request_error");
  });

  it("reads the name from the body's __type when no header says it, and from the status when nothing does", () => {
    expect(
      converseToChatError(403, {
        __type: "com.amazon.coral.service#UnrecognizedClientException",
        message: "The security token included in the request is invalid.",
      }),
    ).toEqual({
      error: {
        message: "The security token included in the request is invalid. (Bedrock UnrecognizedClientException)",
        type: "authentication_error",
        code: "UnrecognizedClientException",
      },
    });
    expect(converseToChatError(429, { Message: "slow down" })).toEqual({ error: { message: "slow down", type: "rate_limit_error" } });
    expect(converseToChatError(502, "<html>bad gateway</html>")).toEqual({ error: { message: "<html>bad gateway</html>", type: "backend_error" } });
    expect(converseToChatError(503, "")).toEqual({ error: { message: "the backend answered HTTP 503", type: "backend_error" } });
    // Header names are case-insensitive, in a record or a Headers.
    const headers = new Headers({ "X-Amzn-Errortype": "ThrottlingException" });
    expect((converseToChatError(429, { message: "m" }, headers).error as { code: string }).code).toBe("ThrottlingException");
    expect(errorName("com.amazon.coral.validate#ValidationException:http://x")).toBe("ValidationException");
  });

  it("marks a too-long prompt with OpenAI's context_length_exceeded code", () => {
    expect(converseToChatError(400, { message: "Input is too long for requested model." }, header("ValidationException"))).toEqual({
      error: {
        message: "Input is too long for requested model. (Bedrock ValidationException)",
        type: "invalid_request_error",
        code: "context_length_exceeded",
      },
    });
    // Another validation error is not one.
    expect(
      (converseToChatError(400, { message: "The text field in the ContentBlock object at messages.0.content.0 is blank." }, header("ValidationException"))
        .error as { code: string }).code,
    ).toBe(
      "ValidationException",
    );
  });

  it("is the provider translator's translateError", () => {
    const translator = bedrockProvider.createTranslator(context);
    expect(translator.translateError?.(429, { message: "Too many tokens, please wait before trying again." })).toEqual({
      error: { message: "Too many tokens, please wait before trying again.", type: "rate_limit_error" },
    });
  });
});

describe("isContextWindowError", () => {
  it("recognises the wordings Bedrock and its models use for a prompt that does not fit", () => {
    for (
      const message of [
        "Input is too long for requested model.",
        "The model returned the following errors: Input is too long for requested model.",
        "Too many input tokens. Max input tokens: 8192, request input token count: 9279",
        "prompt is too long: 209353 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
      ]
    ) {
      expect(isContextWindowError(400, { message }), message).toBe(true);
    }
  });

  it("reads raw Bedrock bodies, translated chat errors and text, and is false for anything else", () => {
    expect(isContextWindowError(400, { error: { message: "x", type: "invalid_request_error", code: "context_length_exceeded" } })).toBe(true);
    expect(isContextWindowError(400, converseToChatError(400, { message: "Input is too long for requested model." }, header("ValidationException")))).toBe(
      true,
    );
    expect(isContextWindowError(400, "Input is too long for requested model.")).toBe(true);
    expect(isContextWindowError(400, { message: "The text field in the ContentBlock object at messages.0.content.0 is blank." })).toBe(false);
    // Throttling is never a context-window error, whatever it says.
    expect(isContextWindowError(429, { message: "Input is too long for requested model." })).toBe(false);
    expect(isContextWindowError(400, undefined)).toBe(false);
  });
});
