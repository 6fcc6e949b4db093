/**
 * A redis-server that speaks only TLS, on a free loopback port, with throwaway certificates
 * (tls-files.ts: the server certificate names TLS_SERVER_NAME only, and a second, unrelated CA
 * is made for the "wrong CA" case). Debian's redis-server is built with TLS.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, spawnListening } from "./servers.ts";
import { makeTlsFiles, tlsServerArgs } from "./tls-files.ts";

export { TLS_SERVER_NAME } from "./tls-files.ts";

export interface TlsRedis {
  port: number;
  addr: string;
  /** PEM of the CA that signed the server certificate. */
  caFile: string;
  /** PEM of a CA that signed nothing the server holds. */
  wrongCaFile: string;
  stop(): Promise<void>;
}

export async function startTlsRedis(): Promise<TlsRedis> {
  const dir = mkdtempSync(join(tmpdir(), "gw-redis-tls-"));
  const started = async () => {
    const files = makeTlsFiles(dir);
    const port = await freePort();
    const child = await spawnListening(
      "redis-server",
      [...tlsServerArgs(files, port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
      port,
      { readyLine: "Ready to accept connections" },
    );
    return { files, port, child };
  };
  const { files, port, child } = await started().catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    port,
    addr: `127.0.0.1:${port}`,
    caFile: files.caFile,
    wrongCaFile: files.wrongCaFile,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.kill("SIGTERM");
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
