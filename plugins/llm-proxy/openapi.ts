/**
 * The LLM proxy's part of the API document: the request bodies of the Chat Completions and
 * Messages routes and the Messages error body, which the sync proxy's operations for LLM
 * services refer to.
 */
import { Type } from "@sinclair/typebox";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import { StringEnum } from "../../core/openapi/schema.ts";

export const llmProxyOpenApi: OpenApiContribution = {
  schemas: {
    ChatCompletionRequest: Type.Object(
      {
        model: Type.String(),
        messages: Type.Array(
          Type.Object({ role: Type.String({ example: "user" }), content: Type.Unknown() }, { additionalProperties: true }),
          { minItems: 1 },
        ),
        stream: Type.Optional(Type.Boolean({ description: "Server-sent events; bypasses the response cache" })),
        max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
        temperature: Type.Optional(Type.Number()),
      },
      { additionalProperties: true, description: "Chat Completions request; other fields are passed on" },
    ),
    MessagesRequest: Type.Object(
      {
        model: Type.String(),
        messages: Type.Array(
          Type.Object({
            role: StringEnum(["user", "assistant"]),
            content: Type.Unknown({ description: "A string or content blocks (text, image, tool_use, tool_result)" }),
          }, { additionalProperties: true }),
        ),
        max_tokens: Type.Integer({ minimum: 1 }),
        system: Type.Optional(Type.Unknown({ description: "A string or text blocks" })),
        stream: Type.Optional(Type.Boolean({ description: "Server-sent Messages events; bypasses the response cache" })),
        tools: Type.Optional(
          Type.Array(
            Type.Object({ name: Type.String(), description: Type.Optional(Type.String()), input_schema: Type.Unknown() }, { additionalProperties: true }),
          ),
        ),
      },
      {
        additionalProperties: true,
        description: "Messages API request: forwarded as is to a backend that speaks it, else translated to Chat Completions and the answer back",
      },
    ),
    MessagesError: Type.Object(
      {
        type: StringEnum(["error"]),
        error: Type.Object({
          type: Type.String({ example: "not_found_error" }),
          message: Type.String({ description: "What went wrong and what to change" }),
        }),
      },
      { description: "Every error on the Messages routes has this body (the Messages API's own shape)" },
    ),
  },
};
