/**
 * What deploy/'s Kubernetes manifests, compose file and Dockerfile say, checked against the
 * gateway (no cluster, container engine or image build here): the ConfigMap carries
 * deploy/config.yaml and the gateway's config loader accepts it with the values the manifests
 * provide; probes call the paths and ports the gateway serves; every environment variable set is
 * one the gateway reads; the Dockerfile's EXPOSE, HEALTHCHECK, USER and CMD agree with the
 * config, and its healthcheck command works against a running gateway.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseListenAddress } from "../../core/config/addr.ts";
import { loadConfig } from "../../plugins/config.ts";
import { type GatewayProcess, onDeno, repoRoot, startGateway } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";
import { composeFile, configVariables, deployText, dockerfile, execForm, type KubeObject, manifests } from "./deploy-files.ts";

/** The environment variables the gateway's process code reads (`env.NAME` in adapters/), found in the source. */
function variablesReadByAdapters(): Set<string> {
  const names = new Set<string>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith(".ts")) { for (const m of readFileSync(path, "utf8").matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)) names.add(m[1]); }
    }
  };
  visit(join(repoRoot, "adapters"));
  return names;
}

/** Every variable a deployment may set: the process's own and the ones deploy/config.yaml expands. */
function variablesTheGatewayReads(): Set<string> {
  const { required, optional } = configVariables();
  return new Set([...variablesReadByAdapters(), ...required, ...optional]);
}

function portOf(addr: string): number {
  return parseListenAddress(addr)!.port;
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  ports: { name: string; containerPort: number }[];
  env?: { name: string; value?: string }[];
  envFrom?: { secretRef?: { name: string } }[];
  volumeMounts: { name: string; mountPath: string }[];
  readinessProbe: { httpGet: { path: string; port: string | number } };
  livenessProbe: { httpGet: { path: string; port: string | number } };
}

interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    volumes: { name: string; configMap?: { name: string } }[];
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  };
}

const all = (): KubeObject[] => ["configmap.yaml", "secret.yaml", "gateway.yaml", "relay.yaml", "pdb.yaml"].flatMap((f) => manifests(`kubernetes/${f}`));
const one = (kind: string, name: string): KubeObject => {
  const found = all().find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found;
};
const template = (deployment: KubeObject): PodTemplate => (deployment.spec as { template: PodTemplate }).template;
const secretValues = (): Record<string, string> => one("Secret", "inference-gateway-secrets").stringData as Record<string, string>;
const configMapText = (): string => (one("ConfigMap", "inference-gateway-config").data as Record<string, string>)["config.yaml"];
/** deploy/config.yaml loaded with the Secret's values (no encryption key): for the addresses it listens on. */
const listenConfig = () => loadConfig(deployText("config.yaml"), { ...secretValues(), OBJECT_ENCRYPTION_KEY: "" }).config;

/** The environment a container gets: its `env` and every key of the Secret it takes with `envFrom`. */
function containerEnv(container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    expect(from.secretRef?.name).toBe("inference-gateway-secrets");
    Object.assign(env, secretValues());
  }
  for (const { name, value } of container.env ?? []) env[name] = value ?? "";
  return env;
}

describe("deploy/kubernetes", () => {
  it("lists every manifest in kustomization.yaml", () => {
    const kustomization = manifests("kubernetes/kustomization.yaml")[0] as unknown as { resources: string[] };
    const files = readdirSync(join(repoRoot, "deploy/kubernetes")).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it("carries deploy/config.yaml verbatim in the ConfigMap", () => {
    expect(configMapText()).toBe(deployText("config.yaml"));
  });

  it("gives the gateway a config its loader accepts once the Secret's placeholder key is replaced, and refuses the placeholder", () => {
    for (const deployment of [one("Deployment", "inference-gateway"), one("Deployment", "inference-gateway-relay")]) {
      const env = containerEnv(template(deployment).spec.containers[0]);
      // A forgotten placeholder stops the start instead of encrypting under a known key.
      expect(() => loadConfig(configMapText(), env)).toThrow(/object_store\.encryption\.key/);
      const { config } = loadConfig(configMapText(), { ...env, OBJECT_ENCRYPTION_KEY: randomBytes(32).toString("hex") });
      expect(config.redis.addr).toBe(env.REDIS_ADDR);
      expect(config.object_store.endpoint).toBe(env.S3_ENDPOINT);
      expect(config.services[0].inference_url).toBe(env.INFERENCE_URL);
      expect(config.relay.embedded).toBe(false);
    }
  });

  it("sets only environment variables the gateway reads, and every one the config needs", () => {
    const read = variablesTheGatewayReads();
    for (const deployment of [one("Deployment", "inference-gateway"), one("Deployment", "inference-gateway-relay")]) {
      const env = containerEnv(template(deployment).spec.containers[0]);
      for (const name of Object.keys(env)) expect(read, `${deployment.metadata.name} sets ${name}`).toContain(name);
      for (const name of configVariables().required) expect(Object.keys(env), `${deployment.metadata.name} needs ${name}`).toContain(name);
    }
  });

  it("probes the gateway: readiness on /health?ready=1 and liveness on /health, on the port config.yaml listens on", () => {
    const config = listenConfig();
    const cases = [
      { deployment: one("Deployment", "inference-gateway"), port: portOf(config.server.addr) },
      { deployment: one("Deployment", "inference-gateway-relay"), port: portOf(config.relay.metrics_addr) },
    ];
    for (const { deployment, port } of cases) {
      const pod = template(deployment);
      const [container] = pod.spec.containers;
      const portNumber = (ref: string | number) => (typeof ref === "number" ? ref : container.ports.find((p) => p.name === ref)?.containerPort);
      expect(container.readinessProbe.httpGet.path).toBe("/health?ready=1");
      expect(container.livenessProbe.httpGet.path).toBe("/health");
      expect(portNumber(container.readinessProbe.httpGet.port)).toBe(port);
      expect(portNumber(container.livenessProbe.httpGet.port)).toBe(port);
      // The config is mounted where CONFIG_PATH points, from the ConfigMap.
      const env = containerEnv(container);
      const mount = container.volumeMounts.find((m) => env.CONFIG_PATH === `${m.mountPath}/config.yaml`);
      expect(mount, `a mount holding ${env.CONFIG_PATH}`).toBeDefined();
      expect(pod.spec.volumes.find((v) => v.name === mount!.name)?.configMap?.name).toBe("inference-gateway-config");
      expect(pod.spec.securityContext?.runAsNonRoot).toBe(true);
      expect((deployment.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels).toEqual(pod.metadata.labels);
    }
    // The relay runs the relay entry point of the same image.
    const relay = template(one("Deployment", "inference-gateway-relay")).spec.containers[0];
    expect(relay.command?.slice(-3)).toEqual(["dist/adapters/node/cli.js", "--role", "relay"]);
    expect(relay.image).toBe(template(one("Deployment", "inference-gateway")).spec.containers[0].image);
  });

  it("routes the Service to the gateway pods' port and keeps one of them through voluntary disruptions", () => {
    const pod = template(one("Deployment", "inference-gateway"));
    const service = one("Service", "inference-gateway").spec as { selector: Record<string, string>; ports: { targetPort: string }[] };
    expect(service.selector).toEqual(pod.metadata.labels);
    expect(pod.spec.containers[0].ports.map((p) => p.name)).toContain(service.ports[0].targetPort);
    const pdb = one("PodDisruptionBudget", "inference-gateway").spec as { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    expect(pdb.selector.matchLabels).toEqual(pod.metadata.labels);
    const replicas = (one("Deployment", "inference-gateway").spec as { replicas: number }).replicas;
    expect(pdb.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.minAvailable).toBeLessThan(replicas);
  });
});

describe("deploy/compose.yaml", () => {
  it("sets only environment variables the gateway reads, every one the config needs, and mounts deploy/config.yaml", () => {
    const read = variablesTheGatewayReads();
    const compose = composeFile();
    const gateways = Object.entries(compose.services).filter(([, s]) => s.image === "inference-gateway:local");
    expect(gateways.length).toBe(3);
    for (const [name, service] of gateways) {
      const env = service.environment ?? {};
      for (const key of Object.keys(env)) expect(read, `${name} sets ${key}`).toContain(key);
      for (const key of configVariables().required) expect(Object.keys(env), `${name} needs ${key}`).toContain(key);
      expect(service.volumes).toContain(`./config.yaml:${env.CONFIG_PATH}:ro`);
    }
  });
});

describe("deploy/Dockerfile", () => {
  const instructions = dockerfile();
  const runtime = instructions.filter((i) => i.stage === "runtime");
  const last = (keyword: string) => runtime.filter((i) => i.keyword === keyword).at(-1);

  it("builds in one stage with the dev dependencies and runs with production dependencies only, as a non-root user", () => {
    expect(instructions.filter((i) => i.keyword === "FROM").map((i) => i.stage)).toEqual(["build", "runtime"]);
    expect(instructions.some((i) => i.stage === "build" && i.keyword === "RUN" && i.args.includes("npm run build"))).toBe(true);
    expect(runtime.some((i) => i.keyword === "RUN" && /npm ci --omit=dev/.test(i.args))).toBe(true);
    expect(runtime.some((i) => i.keyword === "COPY" && i.args.startsWith("--from=build /app/dist"))).toBe(true);
    expect(last("USER")?.args).not.toMatch(/^(root|0)(:|$)/);
  });

  it("exposes the port config.yaml listens on, checks /health there, and runs node itself as PID 1", () => {
    const config = listenConfig();
    const port = portOf(config.server.addr);
    expect(last("EXPOSE")?.args).toBe(String(port));
    const healthcheck = last("HEALTHCHECK")!.args;
    expect(healthcheck).toContain(`'http://127.0.0.1:${port}/health'`);
    // Exec form (a JSON array): no shell between the container runtime and node, so node is PID 1
    // and SIGTERM reaches the gateway, which handles it (docs/operations.md, graceful shutdown).
    const cmd = execForm(last("CMD")!.args);
    expect(cmd?.[0]).toBe("node");
    expect(cmd?.at(-1)).toBe("dist/adapters/node/cli.js");
    expect(existsSync(join(repoRoot, "adapters/node/main.ts"))).toBe(true);
    expect(last("STOPSIGNAL")?.args ?? "SIGTERM").toBe("SIGTERM");
  });

  describe.skipIf(onDeno)("its HEALTHCHECK command (the image runs Node)", () => {
    let gw: GatewayProcess | undefined;
    afterAll(async () => {
      await gw?.kill();
    });

    it("passes against a running gateway and fails when nothing answers", async () => {
      gw = await startGateway("services: []\n");
      const command = execForm(last("HEALTHCHECK")!.args.replace(/^.*?CMD\s+/, ""))!;
      expect(command[0]).toBe("node");
      const run = (host: string) => spawnSync(process.execPath, command.slice(1).map((a) => a.replace("127.0.0.1:8080", host)), { timeout: 10_000 }).status;
      expect(run(`127.0.0.1:${gw.port}`)).toBe(0);
      expect(run(`127.0.0.1:${await freePort()}`)).toBe(1);
    });
  });
});

/**
 * The runtime flags users get from `npm start` (docs/deployment.md "Process flags"): every file
 * that starts the process itself passes the same ones, so a deployment runs what was measured.
 */
describe("the process's runtime flags", () => {
  const scripts = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  /** The options between `node` and the entry point of a command line. */
  const nodeFlags = (words: readonly string[]): string[] => words.slice(words.indexOf("node") + 1, words.findIndex((w) => w.endsWith("cli.js")));
  const npmStart = nodeFlags(scripts.start.split(/\s+/));

  it("npm start sets the V8 heap and GC flags the docs describe", () => {
    expect(npmStart).toEqual(["--max-semi-space-size=32", "--heap-growing-percent=20", "--single-threaded-gc", "--no-allocation-site-pretenuring"]);
    expect(nodeFlags(scripts.relay.split(/\s+/))).toEqual(npmStart);
  });

  it("deno task start and relay pass the same through --v8-flags", () => {
    const tasks = (JSON.parse(readFileSync(join(repoRoot, "deno.json"), "utf8")) as { tasks: Record<string, string> }).tasks;
    for (const task of [tasks.start, tasks.relay]) {
      const v8 = task.split(/\s+/).find((w) => w.startsWith("--v8-flags="));
      expect(v8?.slice("--v8-flags=".length).split(",")).toEqual(npmStart);
    }
  });

  it("the image, compose's relay, the Kubernetes relay and the systemd unit run node with them", () => {
    const cmd = execForm(dockerfile().filter((i) => i.keyword === "CMD").at(-1)!.args)!;
    expect(nodeFlags(cmd)).toEqual(npmStart);
    const composeCommands = Object.values(composeFile().services).flatMap((service) => (service.command?.[0] === "node" ? [service.command] : []));
    expect(composeCommands.length).toBeGreaterThan(0);
    for (const command of composeCommands) expect(nodeFlags(command)).toEqual(npmStart);
    const relay = template(one("Deployment", "inference-gateway-relay")).spec.containers[0];
    expect(nodeFlags(relay.command ?? [])).toEqual(npmStart);
    const execStart = /^ExecStart=(.*)$/m.exec(deployText("systemd/inference-gateway.service"))![1].split(/\s+/);
    expect(nodeFlags(execStart.map((w) => (w === "/usr/bin/node" ? "node" : w)))).toEqual(npmStart);
  });
});
