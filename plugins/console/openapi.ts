/** The console's part of the API document: its page. */
import { ADMIN, servedOperations } from "../../core/openapi/admin.ts";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";

export const consoleOpenApi: OpenApiContribution = {
  paths: {
    console: (input) =>
      servedOperations(input, [
        {
          method: "get",
          path: "/-/console",
          operation: {
            operationId: "console",
            summary: "The admin console",
            description: `An HTML page over these endpoints; it asks for the admin token. ${ADMIN}`,
            tags: ["Admin"],
            responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } },
          },
        },
      ]),
  },
};
