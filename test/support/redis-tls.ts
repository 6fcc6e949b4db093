/**
 * A redis-server that speaks only TLS, on a free loopback port, with a throwaway CA made by
 * `openssl` in a temp dir: the server certificate names SERVER_NAME only (no IP), so a client
 * that checks it against 127.0.0.1 is refused, and one given `server_name` is let in. A second,
 * unrelated CA is made too, for the "wrong CA" case. Debian's redis-server is built with TLS.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, spawnListening } from "./servers.ts";

export const TLS_SERVER_NAME = "redis.gateway.test";

export interface TlsRedis {
  port: number;
  addr: string;
  /** PEM of the CA that signed the server certificate. */
  caFile: string;
  /** PEM of a CA that signed nothing the server holds. */
  wrongCaFile: string;
  stop(): Promise<void>;
}

export function opensslInstalled(): boolean {
  return spawnSync("openssl", ["version"], { stdio: "ignore" }).status === 0;
}

function openssl(dir: string, args: string[]): void {
  const run = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${run.stderr}`);
}

/** A self-signed CA: `<name>.key` and `<name>.crt` in `dir`. */
function makeCa(dir: string, name: string): void {
  openssl(dir, ["req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "2", "-subj", `/CN=${name}`]);
}

export async function startTlsRedis(): Promise<TlsRedis> {
  if (!opensslInstalled()) throw new Error("openssl is not installed; the TLS tests need it: apt-get install openssl");
  const dir = mkdtempSync(join(tmpdir(), "gw-redis-tls-"));
  makeCa(dir, "ca");
  makeCa(dir, "wrong-ca");
  openssl(dir, ["req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-keyout", "server.key", "-out", "server.csr", "-subj", `/CN=${TLS_SERVER_NAME}`]);
  writeFileSync(join(dir, "server.ext"), `subjectAltName=DNS:${TLS_SERVER_NAME}\n`);
  openssl(dir, ["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext"]);

  const port = await freePort();
  const child: ChildProcess = await spawnListening(
    "redis-server",
    [
      "--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
      "--tls-cert-file", join(dir, "server.crt"), "--tls-key-file", join(dir, "server.key"), "--tls-ca-cert-file", join(dir, "ca.crt"), "--tls-auth-clients", "no",
    ],
    port,
  );
  return {
    port,
    addr: `127.0.0.1:${port}`,
    caFile: join(dir, "ca.crt"),
    wrongCaFile: join(dir, "wrong-ca.crt"),
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
