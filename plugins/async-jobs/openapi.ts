/** The async jobs' part of the API document: submission per service type, the job endpoints, purge, queue depths and relay dead letters. */
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import { queueAdminPaths } from "./openapi-admin.ts";
import { jobPaths } from "./openapi-paths.ts";
import { jobSchemas } from "./openapi-schemas.ts";

export const asyncJobsOpenApi: OpenApiContribution = {
  tags: [{ name: "Jobs", description: "Async jobs: status, cancellation, listing" }],
  schemas: jobSchemas,
  paths: { jobs: jobPaths, queues: queueAdminPaths },
};
