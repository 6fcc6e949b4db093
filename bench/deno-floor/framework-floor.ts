/**
 * The framework floor on Deno: `deno run --allow-all bench/deno-floor/framework-floor.ts PORT
 * TARGET_URL`, what bench/framework-floor.ts is on Node. One Hono route on `Deno.serve`, the
 * body read whole, forwarded with Deno's `fetch`, the answer read whole; an event stream is
 * passed on chunk by chunk through JavaScript (a reader and a stream pulling from it), as a
 * gateway that watches a stream's events must, rather than handed to the server as the fetch
 * body itself, which Deno could pipe without JavaScript seeing a chunk. Next to the Node floor
 * it shows what the runtime alone costs (`cpu-count --deno-floor`; bench/README.md).
 */
import { floorApp } from "../floor-app.ts";

const port = Number(Deno.args[0] ?? 0);
const target = (Deno.args[1] ?? "http://127.0.0.1:9000").replace(/\/+$/, "");

/** The chunks of `body`, read and enqueued one by one in JavaScript. */
function passedOn(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

const app = floorApp(target, fetch, passedOn);
Deno.serve({
  port,
  hostname: "127.0.0.1",
  onListen: (address) => console.log(JSON.stringify({ listening: address.port })),
}, app.fetch);
Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
