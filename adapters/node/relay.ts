/** `npm run relay`: a standalone relay worker process with the gateway's config. */
import { boot, handleShutdown } from "../boot.ts";
import { nodePlatform } from "./platform.ts";

const booted = await boot(nodePlatform, "relay");
// No HTTP server: the relay's background tasks keep the process alive until a signal.
const keepAlive = setInterval(() => {}, 1 << 30);
handleShutdown(nodePlatform, booted, async () => clearInterval(keepAlive));
