/** The backend health plugin's part of the API document: `GET /-/backends` and its answer. */
import { Type } from "@sinclair/typebox";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import type { DocInput } from "../../core/openapi/input.ts";
import { jsonResponse } from "../../core/openapi/responses.ts";
import { StringEnum } from "../../core/openapi/schema.ts";
import type { Paths } from "../../core/openapi/types.ts";

function backendPaths(input: DocInput): Paths {
  if (!input.served("get", "/-/backends")) return {};
  return {
    "/-/backends": {
      get: {
        operationId: "backend_health",
        summary: "The health of each service's backends",
        description: "Healthy, or ejected (sitting out a Retry-After or an ejection for failures in a row) until when. Admin endpoint: secure /-/* upstream.",
        tags: ["Admin"],
        responses: { "200": jsonResponse("BackendList", "One entry per configured backend of each service") },
      },
    },
  };
}

export const backendHealthOpenApi: OpenApiContribution = {
  schemas: {
    BackendList: Type.Object(
      {
        since: Type.String({ format: "date-time", description: "When the counts started: this gateway process's start or its last reload" }),
        backends: Type.Array(
          Type.Object({
            service_type: Type.String(),
            model: Type.String({ description: "The service's model alias" }),
            url: Type.String({ description: "The backend's address, without credentials or query" }),
            state: StringEnum(["healthy", "ejected"]),
            ejected_until: Type.String({ format: "date-time", nullable: true, description: "When an ejected backend is tried again; null when healthy" }),
            consecutive_failures: Type.Integer({ minimum: 0, description: "Failures since the last success or ejection" }),
            ejections: Type.Integer({ minimum: 0, description: "Sit-outs started (Retry-After or ejection) since `since`" }),
            requests: Type.Integer({ minimum: 0, description: "Attempts sent to the backend since `since` (each failover or retry attempt counts)" }),
            failures: Type.Integer({ minimum: 0, description: "Of those, the failed ones (a failover status or no answer)" }),
          }),
        ),
      },
      { description: "Each configured backend of each service, as the backend-health plugin sees it" },
    ),
  },
  paths: { backends: backendPaths },
};
