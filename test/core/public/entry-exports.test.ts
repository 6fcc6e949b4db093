/**
 * The public entry point (`inference-gateway/plugin`, core/public/plugin.ts) is all a plugin
 * written outside this repository can import. Every type the plugin contract mentions must be
 * exported from it, down to the types those types mention: `PluginApi` and `PluginDefinition`,
 * and the contracts of the services a request mode uses (`syncModes`, `admin`). Checked with the
 * compiler on the source, so a new member that names an unexported type fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../../..");
const entry = join(root, "core/public/plugin.ts");

/** Where a type must be exported from the entry when the contract names it: the repository's core and the packages whose types the contract hands out. */
const CHECKED = [/^core\//, /(^|\/)node_modules\/hono\//, /(^|\/)node_modules\/@sinclair\/typebox\//];
/** The types the walk starts from. */
const ROOTS = ["PluginApi", "PluginDefinition", "SyncModes", "AdminAccess"];

let built: ts.Program | undefined;

/** The entry and what it reaches, compiled once for the file. */
function program(): ts.Program {
  if (built) return built;
  const configPath = join(root, "tsconfig.json");
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, root);
  built = ts.createProgram([entry], { ...options, noEmit: true });
  return built;
}

function projectPath(file: string): string {
  return relative(root, file).split(sep).join("/");
}

function isHidden(member: ts.Node): boolean {
  const flags = ts.getCombinedModifierFlags(member as ts.Declaration);
  if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) return true;
  const name = (member as ts.NamedDeclaration).name;
  return ts.isConstructorDeclaration(member) || (name !== undefined && ts.isPrivateIdentifier(name));
}

/** The types a contract names and the entry does not export, each with where it is named. */
function missingExports(): string[] {
  const prog = program();
  const checker = prog.getTypeChecker();
  const source = prog.getSourceFile(entry);
  if (!source) throw new Error(`cannot read ${entry}`);
  const resolveAlias = (symbol: ts.Symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  const exported = new Map<ts.Symbol, string>();
  for (const symbol of checker.getExportsOfModule(checker.getSymbolAtLocation(source)!)) exported.set(resolveAlias(symbol), symbol.name);

  const missing = new Set<string>();
  const seen = new Set<ts.Symbol>();
  const walk = (symbol: ts.Symbol) => {
    if (seen.has(symbol)) return;
    seen.add(symbol);
    for (const declaration of symbol.declarations ?? []) {
      const file = projectPath(declaration.getSourceFile().fileName);
      if (!file.startsWith("core/")) continue; // a package's own types: its own business
      const visit = (node: ts.Node, where: string) => {
        if (ts.isTypeElement(node) || ts.isClassElement(node)) {
          if (isHidden(node)) return;
          const name = (node as ts.NamedDeclaration).name;
          if (name) where = `${symbol.name}.${name.getText()}`;
        }
        if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
          const target = checker.getSymbolAtLocation(ts.isTypeReferenceNode(node) ? node.typeName : node.expression);
          if (target) check(resolveAlias(target), where);
        }
        ts.forEachChild(node, (child) => visit(child, where));
      };
      // A declaration merged into from elsewhere (GatewayServices) is visited where it is declared.
      ts.forEachChild(declaration, (child) => visit(child, symbol.name));
    }
  };
  const check = (symbol: ts.Symbol, where: string) => {
    if (symbol.flags & ts.SymbolFlags.TypeParameter) return;
    const files = (symbol.declarations ?? []).map((d) => projectPath(d.getSourceFile().fileName));
    if (!files.some((file) => CHECKED.some((pattern) => pattern.test(file)))) return;
    if (!exported.has(symbol)) missing.add(`${symbol.name} (named by ${where})`);
    walk(symbol);
  };
  for (const name of ROOTS) {
    const symbol = [...exported].find(([, exportedName]) => exportedName === name)?.[0];
    if (!symbol) missing.add(`${name} (a root of the contract)`);
    else walk(symbol);
  }
  return [...missing].sort();
}

/** The core's files that add a service to `GatewayServices` (the contracts of the built-in services). */
function serviceContracts(dir = join(root, "core")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((item) => {
    const path = join(dir, item.name);
    if (item.isDirectory()) return serviceContracts(path);
    return item.name.endsWith(".ts") && /\binterface GatewayServices\s*\{\s*\S/.test(readFileSync(path, "utf8")) ? [projectPath(path)] : [];
  });
}

describe("inference-gateway/plugin", () => {
  it("reaches every service contract the core declares, so `api.use` knows them all", () => {
    const reached = new Set(program().getSourceFiles().map((file) => projectPath(file.fileName)));
    const contracts = serviceContracts();
    expect(contracts).toContain("core/proxy/modes.ts");
    expect(contracts.filter((file) => !reached.has(file))).toEqual([]);
  });

  it("exports every type the plugin contract names, and every type those name", () => {
    expect(missingExports()).toEqual([]);
  });
});
