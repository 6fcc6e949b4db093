/**
 * The ids of files, batches and batch requests. Each carries its creation time (ms, base 36,
 * fixed width) after its prefix, so a list cursor (`after`) says where it stands without a
 * lookup, and still works once the item it names is deleted.
 */
const TIME_WIDTH = 9;

export type IdPrefix = "file-" | "batch_" | "msgbatch_" | "batch_req_";

export function newId(prefix: IdPrefix, now: number, uuid: string): string {
  return `${prefix}${Math.max(0, Math.floor(now)).toString(36).padStart(TIME_WIDTH, "0")}${uuid.replace(/-/g, "").slice(0, 16)}`;
}

/** The creation time an id carries, or undefined for a string that is not such an id. */
export function idTime(id: string, prefix: IdPrefix): number | undefined {
  if (!id.startsWith(prefix)) return undefined;
  const rest = id.slice(prefix.length);
  if (!/^[0-9a-z]{9}[0-9a-f]{16}$/.test(rest)) return undefined;
  return parseInt(rest.slice(0, TIME_WIDTH), 36);
}
