/**
 * The console's panels, in tab order. A new panel is one file here exporting a
 * `ConsolePanel` (see panel.ts; queues.ts is a small example) and one entry in this list.
 */
import { backendsPanel } from "./backends.ts";
import { configPanel } from "./config.ts";
import { keysPanel } from "./keys.ts";
import type { ConsolePanel } from "./panel.ts";
import { queuesPanel } from "./queues.ts";
import { usagePanel } from "./usage.ts";
import { webhooksPanel } from "./webhooks.ts";

export const PANELS: readonly ConsolePanel[] = [
  usagePanel,
  queuesPanel,
  webhooksPanel,
  keysPanel,
  backendsPanel,
  configPanel,
];
