/** `services[i].response_cache_ttl`: how long an LLM answer of the service is served from the cache. */
import { Type, type Static } from "@sinclair/typebox";
import type { ServiceFieldSet } from "../../core/config/schema.ts";

export const CacheServiceFields = Type.Object({
  response_cache_ttl: Type.Integer({ minimum: 0, default: 0, description: "LLM response cache seconds; 0 = off" }),
});

declare module "../../core/config/schema.ts" {
  interface ServiceFields extends Static<typeof CacheServiceFields> {}
}

export const cacheServiceFields: ServiceFieldSet<typeof CacheServiceFields> = { schema: CacheServiceFields };
