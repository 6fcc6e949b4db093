/** `npx deno task start`: the same gateway on Deno 2. */
import { boot, handleShutdown, listenAddress } from "../boot.ts";
import { denoPlatform } from "./platform.ts";

const booted = await boot(denoPlatform, "gateway");
const { hostname, port } = listenAddress(booted.gateway.config.server.addr, denoPlatform.env);
const server = Deno.serve(
  {
    hostname: hostname ?? "0.0.0.0",
    port,
    onListen: (addr) => booted.log.info("listening", { address: addr.hostname, port: addr.port, runtime: `deno ${Deno.version.deno}` }),
  },
  // `completed` settles when the response has been sent (rejects if the client went away).
  (request, info) => booted.gateway.fetch(request, { responded: info.completed }),
);

handleShutdown(denoPlatform, booted, () => server.shutdown());
