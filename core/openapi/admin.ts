/** What the admin endpoints (`/-/*`) of several plugins document alike. */
import type { DocInput } from "./input.ts";
import { schemaRef } from "./responses.ts";
import type { Method, Operation, Parameter, Paths, RequestBody } from "./types.ts";

/** Ends the description of an admin operation. */
export const ADMIN = "Admin endpoint: secure /-/* upstream.";

/** `?limit=&offset=` of an admin list. */
export const PAGE: Parameter[] = [
  { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
  { name: "offset", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
];

/** A required JSON body with a component schema. */
export const body = (schema: string): RequestBody => ({ required: true, content: { "application/json": { schema: schemaRef(schema) } } });

export interface AdminOperation {
  method: Method;
  path: string;
  operation: Operation;
}

/** The operations this runtime serves, as paths (an operation whose route is absent is left out). */
export function servedOperations(input: DocInput, operations: readonly AdminOperation[]): Paths {
  const paths: Paths = {};
  for (const { method, path, operation } of operations) {
    if (!input.served(method, path)) continue;
    paths[path] = { ...paths[path], [method]: operation };
  }
  return paths;
}
