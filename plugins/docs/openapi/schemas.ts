/**
 * The bodies of the core's own endpoints (the error body, health, reload, the running
 * config) as TypeBox schemas, in the subset core/openapi/schema.ts describes. Each plugin
 * declares the bodies of its own endpoints (`definePlugin({ openapi })`).
 */
import { type TSchema, Type } from "@sinclair/typebox";
import { ref, StringEnum } from "../../../core/openapi/schema.ts";
import { ERROR_CODES } from "../../../core/errors.ts";

export const coreSchemas: Record<string, TSchema> = {
  Error: Type.Object(
    {
      error: Type.Object({
        message: Type.String({ description: "What went wrong and what to change" }),
        type: Type.String({ description: "Error class, e.g. invalid_request_error, not_found_error, rate_limit_error", example: "not_found_error" }),
        code: StringEnum(Object.keys(ERROR_CODES), {
          description: "A stable code to branch on, e.g. model_not_found, budget_exceeded (docs/errors.md lists them)",
          example: "model_not_found",
        }),
      }),
    },
    { description: "Every error the gateway answers with has this body" },
  ),
  Health: Type.Object({
    status: StringEnum(["ok", "unavailable"]),
    checks: Type.Optional(
      Type.Object({ kv: Type.String(), objects: Type.String() }, { description: 'With ?ready=1: each store\'s ping, "ok" or "down: <reason>"' }),
    ),
  }),
  ReloadResult: Type.Object({ status: StringEnum(["reloaded"]), services: Type.Integer({ minimum: 0, description: "Services in the new config" }) }),
  ReloadError: Type.Object({
    error: ref("ErrorDetail"),
    problems: Type.Array(Type.String(), { description: "Every problem of the refused file, each with its path" }),
  }),
  ErrorDetail: Type.Object({ message: Type.String(), type: Type.String(), code: StringEnum(["config_invalid", "reload_failed"]) }),
  RunningConfig: Type.Object({}, { additionalProperties: true, description: 'The running config, every secret as "***" (an unset one stays empty)' }),
};
