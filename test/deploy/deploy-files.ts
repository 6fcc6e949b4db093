/**
 * Reading the files of deploy/ as the tools that use them would: compose's variable
 * interpolation, a Dockerfile's instructions, a systemd unit's keys. Only what the deploy tests
 * check; no container engine, orchestrator or systemd is needed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { repoRoot } from "../support/gateway-process.ts";

export const deployDir = join(repoRoot, "deploy");

export function deployText(path: string): string {
  return readFileSync(join(deployDir, path), "utf8");
}

/** compose.yaml as compose reads it (merge keys `<<:` included). */
export function composeFile(): ComposeFile {
  return parse(deployText("compose.yaml"), { merge: true }) as ComposeFile;
}

/**
 * compose.yaml with an override file on top (`docker compose -f compose.yaml -f OVERRIDE`):
 * the override's services are added, and for a service both define, its environment entries
 * win over the base's (compose merges environment maps) and its other keys are added.
 */
export function composeWith(override: string): ComposeFile {
  const base = composeFile();
  const extra = parse(deployText(override), { merge: true }) as ComposeFile;
  for (const [name, service] of Object.entries(extra.services)) {
    const current = base.services[name];
    base.services[name] = current ? { ...current, ...service, environment: { ...current.environment, ...service.environment } } : service;
  }
  return base;
}

export interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
}

/**
 * Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?message}` from the shell
 * that runs `docker compose`; a required variable that is unset throws with its message.
 */
export function composeInterpolate(value: string, shell: Record<string, string>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}/g, (_all, name: string, op: string | undefined, arg: string | undefined) => {
    const set = shell[name];
    if (set !== undefined && set !== "") return set;
    if (op === ":?") throw new Error(`compose refuses to start: ${name}: ${arg}`);
    return op === ":-" ? (arg ?? "") : "";
  });
}

/** Every Kubernetes object of one manifest file (several documents). */
export function manifests(path: string): KubeObject[] {
  return parseAllDocuments(deployText(path)).map((doc) => doc.toJSON() as KubeObject);
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // The rest is read by path in the tests.
  [key: string]: unknown;
}

export interface DockerInstruction {
  stage: string;
  keyword: string;
  args: string;
}

/** A Dockerfile's instructions (continuation lines joined, comments dropped), each with the stage it belongs to. */
export function dockerfile(): DockerInstruction[] {
  const joined = deployText("Dockerfile").replace(/\\\n\s*/g, "");
  const instructions: DockerInstruction[] = [];
  let stage = "";
  for (const line of joined.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(trimmed) ?? [];
    if (keyword === undefined || args === undefined) throw new Error(`not an instruction: ${trimmed}`);
    if (keyword.toUpperCase() === "FROM") stage = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? "";
    instructions.push({ stage, keyword: keyword.toUpperCase(), args });
  }
  return instructions;
}

/** The JSON array of an exec-form instruction (`CMD ["node", ...]`), or undefined for shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.trim().startsWith("[")) return undefined;
  return JSON.parse(args) as string[];
}

/** A systemd unit's `Key=value` lines by section; a key given several times keeps every value. */
export function systemdUnit(path: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let current: Record<string, string[]> | undefined;
  for (const line of deployText(path).split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#") || trimmed.startsWith(";")) continue;
    const section = /^\[(.+)\]$/.exec(trimmed);
    if (section) {
      current = sections[section[1]] = {};
      continue;
    }
    const eq = trimmed.indexOf("=");
    if (!current || eq < 0) throw new Error(`not a unit line: ${trimmed}`);
    (current[trimmed.slice(0, eq)] ??= []).push(trimmed.slice(eq + 1));
  }
  return sections;
}

/** The `${VAR}` names deploy/config.yaml expands: those without a default must be set wherever it runs. */
export function configVariables(): { required: string[]; optional: string[] } {
  const required = new Set<string>();
  const optional = new Set<string>();
  for (const match of deployText("config.yaml").matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}/g)) {
    (match[2] === undefined ? required : optional).add(match[1]);
  }
  return { required: [...required].sort(), optional: [...optional].sort() };
}
