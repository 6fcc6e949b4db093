/**
 * Throwaway TLS files for TLS-only redis-servers, made by `openssl` in a temp dir: a CA, a
 * server certificate it signed that names TLS_SERVER_NAME only (no IP, so a client that checks
 * it against 127.0.0.1 is refused and one given `server_name` is let in), and a second,
 * unrelated CA for the "wrong CA" case. One certificate serves every node of a topology, as
 * the server's certificate and as the client certificate nodes show each other.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export const TLS_SERVER_NAME = "redis.gateway.test";

export interface TlsFiles {
  /** PEM of the CA that signed the server certificate. */
  caFile: string;
  /** PEM of a CA that signed nothing the servers hold. */
  wrongCaFile: string;
  certFile: string;
  keyFile: string;
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
  openssl(dir, [
    "req",
    "-x509",
    "-new",
    "-nodes",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
  ]);
}

/** Writes the CAs and the server certificate into `dir` (which the caller owns and removes). */
export function makeTlsFiles(dir: string): TlsFiles {
  if (!opensslInstalled()) throw new Error("openssl is not installed; the TLS tests need it: apt-get install openssl");
  makeCa(dir, "ca");
  makeCa(dir, "wrong-ca");
  openssl(dir, [
    "req",
    "-new",
    "-nodes",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
    "-subj",
    `/CN=${TLS_SERVER_NAME}`,
  ]);
  writeFileSync(join(dir, "server.ext"), `subjectAltName=DNS:${TLS_SERVER_NAME}\n`);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.crt",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  ]);
  return { caFile: join(dir, "ca.crt"), wrongCaFile: join(dir, "wrong-ca.crt"), certFile: join(dir, "server.crt"), keyFile: join(dir, "server.key") };
}

/**
 * redis-server flags for a node that speaks only TLS on `port`. Clients need no certificate of
 * their own (`tls-auth-clients no`), as the gateway presents none.
 */
export function tlsServerArgs(files: TlsFiles, port: number): string[] {
  return [
    "--port",
    "0",
    "--tls-port",
    String(port),
    "--tls-cert-file",
    files.certFile,
    "--tls-key-file",
    files.keyFile,
    "--tls-ca-cert-file",
    files.caFile,
    "--tls-auth-clients",
    "no",
  ];
}
