/**
 * The `syncModes` service: other plugins (the LLM proxy) register a mode that takes over
 * sync requests it accepts; everything else goes to the direct proxy. The first registered
 * mode that accepts a request wins, so registration order (plugin order) is the priority.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { SyncBody, SyncMode, SyncModes } from "../../core/proxy/modes.ts";

export class SyncModeList implements SyncModes {
  private readonly modes: SyncMode[] = [];

  register(mode: SyncMode): void {
    if (this.modes.includes(mode)) throw new Error(`sync mode "${mode.mode}" is registered twice`);
    this.modes.push(mode);
  }

  /** The mode that serves this request, or undefined for the direct proxy. */
  pick(service: ServiceConfig, body: SyncBody): SyncMode | undefined {
    return this.modes.find((mode) => mode.accepts(service, body));
  }
}
