/** The usage endpoints: the caller's own usage, every consumer's, and the calendar report. Each documented only when its route exists. */
import { type DocInput, identityHeaders, oneOfStrings } from "../../core/openapi/input.ts";
import { errors, jsonResponse } from "../../core/openapi/responses.ts";
import type { Parameter, Paths } from "../../core/openapi/types.ts";

export function usagePaths(input: DocInput): Paths {
  const paths: Paths = {};
  const types = [...new Set(input.visible.map((s) => s.type))];
  const page: Parameter[] = [
    { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
    { name: "offset", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
  ];
  if (input.served("get", "/usage")) {
    paths["/usage"] = {
      get: {
        operationId: "my_usage",
        summary: "The calling consumer's usage",
        tags: ["Usage"],
        parameters: identityHeaders(input.config, { consumerRequired: true }),
        responses: { "200": jsonResponse("UsageRecord", "Usage per service type"), ...errors(400, 501) },
      },
    };
  }
  if (input.served("get", "/-/usage")) {
    paths["/-/usage"] = {
      get: {
        operationId: "all_usage",
        summary: "Usage of all consumers",
        description: "Admin endpoint: secure /-/* upstream.",
        tags: ["Admin", "Usage"],
        parameters: [
          { name: "consumer", in: "query", description: "Exactly this consumer", schema: { type: "string" } },
          { name: "type", in: "query", description: "Only this service type, consumers ranked by its requests", schema: oneOfStrings(types) },
          ...page,
        ],
        responses: { "200": jsonResponse("UsageList", "A page of consumers"), ...errors(400, 501) },
      },
    };
  }
  if (input.served("get", "/-/usage/report")) {
    paths["/-/usage/report"] = {
      get: {
        operationId: "usage_report",
        summary: "Calendar-aligned totals across consumers (UTC)",
        description: "At most 400 buckets. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin", "Usage"],
        parameters: [
          { name: "type", in: "query", required: true, schema: oneOfStrings(types) },
          { name: "period", in: "query", required: true, schema: { type: "string", enum: ["daily", "weekly", "monthly"] } },
          { name: "from", in: "query", required: true, schema: { type: "string", format: "date" } },
          { name: "to", in: "query", required: true, schema: { type: "string", format: "date" } },
          { name: "total", in: "query", schema: { type: "boolean" } },
          {
            name: "group_by",
            in: "query",
            description: "Adds `groups`, ranked by cost; `mode` groups `interactive` requests and `batch` lines",
            schema: { type: "string", enum: ["consumer", "model", "key", "mode"] },
          },
        ],
        responses: { "200": jsonResponse("UsageReport", "One entry per bucket"), ...errors(400, 501) },
      },
    };
  }
  return paths;
}
