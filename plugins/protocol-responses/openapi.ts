/**
 * The Responses API's part of the API document: `POST /v1/responses` and
 * `/v1/responses/input_tokens` where a service lists them (replacing the sync proxy's generic
 * entry, which would name the Chat Completions body), and the stored responses' routes.
 */
import { Type } from "@sinclair/typebox";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import { type DocInput, modelNames, oneOfStrings } from "../../core/openapi/input.ts";
import { errors, jsonResponse, schemaRef } from "../../core/openapi/responses.ts";
import type { Operation, Parameter, Paths } from "../../core/openapi/types.ts";
import { INPUT_TOKENS_PATH, RESPONSES_PATH } from "./protocol.ts";

const TAGS = ["Responses"];
const RESPONSE_ID: Parameter = { name: "id", in: "path", required: true, description: "resp_...", schema: { type: "string" } };
const query = (name: string, description: string, schema: Parameter["schema"] = { type: "string" }): Parameter => ({ name, in: "query", description, schema });

function requestBody(input: DocInput, path: string) {
  const services = input.visible.filter((s) => Object.values(s.operations).some((paths) => paths.includes(path)));
  const model = { ...oneOfStrings(modelNames(services)), description: "Model alias (required)" };
  return { required: true, content: { "application/json": { schema: { allOf: [schemaRef("ResponsesRequest"), { type: "object", properties: { model } }] } } } };
}

function create(input: DocInput): Operation {
  return {
    operationId: "responses_create",
    summary: "Create a response",
    description:
      "The Responses API on any LLM backend: translated to Chat Completions and back for backends that do not speak it (the conversation of `previous_response_id` rebuilt from the gateway's store), forwarded as is to a `responses_api` backend.",
    tags: TAGS,
    requestBody: requestBody(input, RESPONSES_PATH),
    responses: {
      "200": {
        description: "The Response; `X-Cache: HIT|MISS`",
        content: {
          "application/json": { schema: schemaRef("Response") },
          "text/event-stream": {
            schema: {
              type: "string",
              description:
                'With "stream": true: response.created ... response.completed (or response.incomplete, or error and response.failed), each with sequence_number',
            },
          },
        },
      },
      ...errors(400, 401, 404, 429, 502, 504),
    },
  };
}

function countTokens(input: DocInput): Operation {
  return {
    operationId: "responses_input_tokens",
    summary: "Count a request's input tokens",
    tags: TAGS,
    requestBody: requestBody(input, INPUT_TOKENS_PATH),
    responses: {
      "200": jsonResponse("ResponseInputTokens", "The count, from a backend that speaks the Responses API or a Messages-style one (501 for any other)"),
      ...errors(400, 401, 404, 501),
    },
  };
}

const STORED: Record<string, Record<string, Operation>> = {
  "/v1/responses/{id}": {
    get: {
      operationId: "responses_retrieve",
      summary: "A stored response",
      tags: TAGS,
      parameters: [RESPONSE_ID],
      responses: { "200": jsonResponse("Response", "The Response as it was answered"), ...errors(401, 404) },
    },
    delete: {
      operationId: "responses_delete",
      summary: "Delete a stored response",
      tags: TAGS,
      parameters: [RESPONSE_ID],
      responses: { "200": jsonResponse("ResponseDeleted", "Deleted"), ...errors(401, 404) },
    },
  },
  "/v1/responses/{id}/input_items": {
    get: {
      operationId: "responses_input_items",
      summary: "A stored response's input items",
      tags: TAGS,
      parameters: [
        RESPONSE_ID,
        query("limit", "Items per page (default 20)", { type: "integer", minimum: 1, maximum: 100, default: 20 }),
        query("order", "asc or desc (default desc)", { type: "string", enum: ["asc", "desc"] }),
        query("after", "The last id of the previous page"),
      ],
      responses: { "200": jsonResponse("ResponseItemList", "A page of items"), ...errors(400, 401, 404) },
    },
  },
};

function responsesPaths(input: DocInput): Paths {
  const paths: Paths = {};
  if (input.served("post", RESPONSES_PATH)) paths[RESPONSES_PATH] = { post: create(input) };
  if (input.served("post", INPUT_TOKENS_PATH)) paths[INPUT_TOKENS_PATH] = { post: countTokens(input) };
  for (const [path, item] of Object.entries(STORED)) {
    const served = Object.fromEntries(Object.entries(item).filter(([method]) => input.served(method as "get" | "delete", path)));
    if (Object.keys(served).length > 0) paths[path] = served;
  }
  return paths;
}

const ITEM = Type.Object({ type: Type.String({ example: "message" }), id: Type.Optional(Type.String()) }, { additionalProperties: true });

export const responsesOpenApi: OpenApiContribution = {
  tags: [{ name: "Responses", description: "The OpenAI Responses API on any LLM backend, with stored responses (docs/responses.md)" }],
  schemas: {
    ResponsesRequest: Type.Object(
      {
        model: Type.String(),
        input: Type.Optional(Type.Unknown({ description: "A string, or input items (message, function_call, function_call_output)" })),
        instructions: Type.Optional(Type.String()),
        previous_response_id: Type.Optional(Type.String({ description: "A stored response of the caller's: the conversation continues from it" })),
        store: Type.Optional(Type.Boolean({ description: "Keep the response for responses.store_ttl (default true)" })),
        stream: Type.Optional(Type.Boolean({ description: "Server-sent Responses events; bypasses the response cache" })),
        tools: Type.Optional(Type.Array(Type.Unknown())),
        max_output_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
      },
      { additionalProperties: true, description: "Responses API request; see docs/responses.md for how each field maps per backend" },
    ),
    Response: Type.Object(
      {
        id: Type.String({ example: "resp_..." }),
        object: Type.String({ example: "response" }),
        created_at: Type.Integer(),
        status: Type.String({ example: "completed" }),
        model: Type.String(),
        output: Type.Array(ITEM),
        usage: Type.Unknown({ description: "input_tokens, output_tokens, total_tokens and their details" }),
        previous_response_id: Type.String({ nullable: true }),
        store: Type.Boolean(),
      },
      { additionalProperties: true, description: "A Response, with the request's settings echoed" },
    ),
    ResponseDeleted: Type.Object({ id: Type.String(), object: Type.String({ example: "response" }), deleted: Type.Boolean() }),
    ResponseItemList: Type.Object({
      object: Type.String({ example: "list" }),
      data: Type.Array(ITEM),
      first_id: Type.String({ nullable: true }),
      last_id: Type.String({ nullable: true }),
      has_more: Type.Boolean(),
    }),
    ResponseInputTokens: Type.Object({ object: Type.String({ example: "response.input_tokens" }), input_tokens: Type.Integer() }),
  },
  paths: { responses: responsesPaths },
};
