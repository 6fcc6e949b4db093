/** The deprecation rule lives with the other helpers for the plugins that document model routes (core/openapi). */
export { type Deprecation, deprecationOf, withNote } from "../../../core/openapi/deprecation.ts";
