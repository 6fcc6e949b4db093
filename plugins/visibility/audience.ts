/**
 * The audience rule (docs/design.md#model-visibility): a service with `visibility` is visible only
 * to callers whose user type is one of `user_types` or who hold one of `groups` (the union of
 * both); a service without `visibility` is public, anonymous callers included.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { Principal } from "../../core/pipeline/context.ts";

export function isVisible(principal: Principal, service: ServiceConfig): boolean {
  const audience = service.visibility;
  if (!audience) return true;
  if (principal.userType !== undefined && audience.user_types.includes(principal.userType)) return true;
  return principal.groups.some((group) => audience.groups.includes(group));
}
