// The import graph keeps its rules: no runtime import cycle (type-only and
// dynamic imports do not count); no circle of imports, type-only ones counted,
// across capability folders (domain/<x> with its sql/, the files directly in
// domain/, or a top folder); every import, type-only too, down the layers; no
// module of functions/ importing a step's handler file.
// Why: docs/decisions/code-layout-and-contracts.md
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = ['bench', 'bin', 'cli', 'domain', 'functions', 'lib', 'local', 'pipelines', 'scripts', 'test'];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The project modules `file` imports at run time (static imports and re-exports that are not type-only); with `types`, type-only ones too. */
export function runtimeImports(file: string, text: string, types = false): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined;
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly || types) specifier = statement.moduleSpecifier;
    } else if (ts.isExportDeclaration(statement)) {
      const named = statement.exportClause;
      const typeOnly =
        statement.isTypeOnly || (named !== undefined && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly));
      if (!typeOnly || types) specifier = statement.moduleSpecifier;
    }
    if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith('.')) found.push(resolve(dirname(file), specifier.text));
  }
  return found;
}

/** Each strongly connected set of more than one module (or a module importing itself), by Tarjan's algorithm. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('the import graph', () => {
  it('finds a cycle of runtime imports, and not one through type-only imports', () => {
    const graph = new Map([
      ['/a.ts', runtimeImports('/a.ts', "import { b } from './b.ts';\nimport type { C } from './c.ts';")],
      ['/b.ts', runtimeImports('/b.ts', "export { a } from './a.ts';")],
      ['/c.ts', runtimeImports('/c.ts', "import { type A } from './a.ts';\nexport type { B } from './b.ts';")],
    ]);

    expect(cycles(graph)).toEqual([['/a.ts', '/b.ts']]);
  });

  it('of the project has no runtime import cycle', () => {
    const files = FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder)));
    const graph = new Map(files.map((file) => [file, runtimeImports(file, readFileSync(file, 'utf8'))]));

    expect(files.length).toBeGreaterThan(300);
    expect(cycles(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)))).toEqual([]);
  });
});

/** The capability folder of a project file: domain/<x> for a file anywhere under domain/<x>/, domain for one directly in it, else its top folder. */
export function capability(file: string): string {
  const [top, folder, ...rest] = relative(ROOT, file).split('/');
  return top === 'domain' && rest.length > 0 ? `domain/${folder}` : top!;
}

/** The strongly connected sets of `graph` whose modules lie in more than one capability folder. */
export function crossFolderCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  return cycles(graph).filter((cycle) => new Set(cycle.map(capability)).size > 1);
}

describe('the capability folders', () => {
  it('finds a circle of type-only imports across folders, and not one within a folder', () => {
    const texts = new Map([
      [join(ROOT, 'domain/a.ts'), "import type { B } from './x/b.ts';"],
      [join(ROOT, 'domain/x/b.ts'), "export type { A } from '../a.ts';"],
      [join(ROOT, 'domain/y/c.ts'), "import type { D } from './sql/d.ts';"],
      [join(ROOT, 'domain/y/sql/d.ts'), "import { c } from '../c.ts';"],
    ]);
    const graph = new Map([...texts].map(([file, text]) => [file, runtimeImports(file, text, true)]));

    expect(crossFolderCycles(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)))).toEqual([['domain/a.ts', 'domain/x/b.ts']]);
  });

  it('of the project are in no circle of imports, type-only ones counted', () => {
    const files = FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder)));
    const graph = new Map(files.map((file) => [file, runtimeImports(file, readFileSync(file, 'utf8'), true)]));

    expect(crossFolderCycles(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)))).toEqual([]);
  });
});

/**
 * The folders each layer may import from besides its own (and packages):
 * the domain nothing, the handlers the domain and the declared pipelines,
 * the CDK app those and the handlers it bundles; the local stand-ins,
 * tools and tests sit above them all. Nothing but the tests and the bench
 * (its lock gates) imports test/.
 */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  domain: [],
  pipelines: ['domain'],
  functions: ['domain', 'pipelines'],
  lib: ['domain', 'pipelines', 'functions'],
  local: ['domain', 'pipelines', 'functions', 'lib'],
  cli: ['domain', 'pipelines', 'functions', 'lib', 'local'],
  bin: ['domain', 'pipelines', 'functions', 'lib', 'local', 'cli'],
  scripts: ['domain', 'pipelines', 'functions', 'lib', 'local'],
  bench: ['domain', 'pipelines', 'functions', 'lib', 'local', 'cli', 'scripts', 'test'],
};

/** Each import of `files` that breaks MAY_IMPORT, or reaches a step's handler file (functions/<step>/index.ts) from functions/, as `from -> to`. */
export function layerViolations(files: readonly string[], read: (file: string) => string): string[] {
  const layer = (file: string) => relative(ROOT, file).split('/')[0]!;
  const handler = /^functions\/[^/]+\/index\.ts$/;
  return files.flatMap((file) => {
    const from = layer(file);
    const allowed = MAY_IMPORT[from];
    if (allowed === undefined) return [];
    return runtimeImports(file, read(file), true)
      .filter((target) => {
        const to = layer(target);
        if (to !== from && !allowed.includes(to)) return true;
        return from === 'functions' && target !== file && handler.test(relative(ROOT, target));
      })
      .map((target) => `${relative(ROOT, file)} -> ${relative(ROOT, target)}`);
  });
}

describe('the layers', () => {
  it('finds an upward import, type-only too, and a handler file imported by another module of functions/', () => {
    const texts = new Map([
      [join(ROOT, 'domain/a.ts'), "import type { Stack } from '../lib/stack.ts';\nimport { b } from './b.ts';"],
      [join(ROOT, 'functions/x/other.ts'), "import { run } from '../y/index.ts';\nimport { plan } from '../../domain/plan/plan.ts';"],
      [join(ROOT, 'lib/c.ts'), "import { handler } from '../functions/x/index.ts';"],
    ]);

    expect(layerViolations([...texts.keys()], (file) => texts.get(file)!)).toEqual([
      'domain/a.ts -> lib/stack.ts',
      'functions/x/other.ts -> functions/y/index.ts',
    ]);
  });

  it('of the project point down, and no handler file is imported within functions/', () => {
    const files = FOLDERS.filter((folder) => folder !== 'test').flatMap((folder) => sourceFiles(join(ROOT, folder)));

    expect(layerViolations(files, (file) => readFileSync(file, 'utf8'))).toEqual([]);
  });
});
