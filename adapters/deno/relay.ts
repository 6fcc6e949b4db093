/** `npx deno task relay`: a standalone relay worker process on Deno. */
import { boot, handleShutdown } from "../boot.ts";
import { denoPlatform } from "./platform.ts";

const booted = await boot(denoPlatform, "relay");
// No HTTP server: the relay's background tasks keep the process alive until a signal.
const keepAlive = setInterval(() => {}, 1 << 30);
handleShutdown(denoPlatform, booted, async () => clearInterval(keepAlive));
