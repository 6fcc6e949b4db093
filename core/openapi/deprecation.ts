/**
 * An operation shared by several models is marked deprecated only once every model
 * on it is; until then the deprecated ones are named in the description of the `model`
 * field. Routing is unchanged either way.
 */
import type { ServiceConfig } from "../config/schema.ts";

export interface Deprecation {
  /** Every (visible) model on the operation is deprecated. */
  operation: boolean;
  /** The sentence naming the deprecated models, when some but not all are. */
  note?: string;
}

export function deprecationOf(services: readonly ServiceConfig[]): Deprecation {
  const deprecated = services.filter((s) => s.deprecated);
  if (services.length > 0 && deprecated.length === services.length) return { operation: true };
  if (deprecated.length === 0) return { operation: false };
  const names = deprecated.map((s) => s.model || `(service type ${s.type})`);
  return { operation: false, note: `Deprecated ${names.length === 1 ? "model" : "models"}: ${names.join(", ")} (still served; plan to move off).` };
}

/** A field description followed by the deprecation note, when there is one. */
export function withNote(description: string, deprecation: Deprecation): string {
  return deprecation.note ? `${description} ${deprecation.note}` : description;
}
