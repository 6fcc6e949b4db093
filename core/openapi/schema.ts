/**
 * Helpers for the component schemas plugins add to the API document (`definePlugin({ openapi })`).
 * Schemas are TypeBox schemas written in the OpenAPI 3.0 subset of JSON Schema: no `const`, no
 * `null` type, no `patternProperties` (so no `Type.Literal` or `Type.Record`).
 */
import { Type } from "@sinclair/typebox";

/** A string restricted to `values` (`enum`, which OpenAPI 3.0 has; `Type.Literal` emits `const`, which it has not). */
export const StringEnum = (values: readonly string[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<string>({ type: "string", enum: [...values], ...options });

/** A reference to another component schema. */
export const ref = (name: string) => Type.Unsafe<unknown>({ $ref: `#/components/schemas/${name}` });

export const Timestamp = (description: string) => Type.String({ format: "date-time", description });

/** The fields of a page of an admin list (`?limit=&offset=`). */
export const PageFields = {
  total: Type.Integer({ minimum: 0, description: "Entries in the whole list" }),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
  offset: Type.Integer({ minimum: 0 }),
};

/** The `ids` of an admin action's body: the entries to act on, or all when left out. */
export const IdList = (what: string) => Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: `${what}; leave it out for all` });
