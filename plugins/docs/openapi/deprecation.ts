/** The deprecation rule lives with the other helpers for the plugins that document model routes (core/openapi). */
export { deprecationOf, withNote, type Deprecation } from "../../../core/openapi/deprecation.ts";
