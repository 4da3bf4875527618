// The AWS API calls a handler's code can make, read from its source: every
// module the entry imports (transitively, through relative imports) is parsed
// with the TypeScript compiler, and every command imported from an
// `@aws-sdk/client-*` package is one IAM action. Anything the scan cannot map
// (a package it does not know, a namespace import of a client, a dynamic
// import) is reported, so a new way of calling AWS cannot slip past it.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../lib/project.ts';

/** IAM service prefix of each SDK client package the handlers may use. */
export const IAM_PREFIX_OF_CLIENT: Record<string, string> = {
  '@aws-sdk/client-redshift-data': 'redshift-data',
  '@aws-sdk/client-sns': 'sns',
  '@aws-sdk/client-sfn': 'states',
  '@aws-sdk/client-cloudwatch': 'cloudwatch',
  '@aws-sdk/client-eventbridge': 'events',
  '@aws-sdk/client-secrets-manager': 'secretsmanager',
};

/** Packages the handlers import that make no AWS API call of their own. */
export const PACKAGES_WITHOUT_AWS_CALLS: Record<string, string> = {
  '@aws-lambda-powertools/logger': 'writes JSON log lines to stdout',
  '@aws-lambda-powertools/logger/middleware': 'the logger as a middy middleware',
  '@aws-lambda-powertools/metrics': 'writes Embedded Metric Format to stdout; CloudWatch reads it from the log',
  '@aws-lambda-powertools/metrics/middleware': 'the metrics as a middy middleware',
  '@aws-lambda-powertools/tracer': "X-Ray segments, sent by Lambda's active tracing (the role's xray:PutTraceSegments), not by an SDK command",
  '@aws-lambda-powertools/tracer/middleware': 'the tracer as a middy middleware',
  '@aws/lambda-invoke-store': "the Lambda runtime's per-invocation store (AsyncLocalStorage)",
  '@middy/core': 'the middleware engine',
  zod: 'schema validation',
  'libpg-query': "PostgreSQL's parser compiled to WebAssembly, loaded from the bundle's folder",
  'aws-lambda': 'types only',
};

export interface SdkCall {
  /** `redshift-data:ExecuteStatement` */
  readonly action: string;
  /** Where the command is imported, relative to the project root. */
  readonly file: string;
}

export interface SdkScan {
  readonly calls: SdkCall[];
  /** Project files reached from the entry. */
  readonly files: string[];
  /** Imports the scan cannot turn into IAM actions, with where they are. */
  readonly unmapped: string[];
}

function resolveModule(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && candidate.endsWith('.ts')) return candidate;
  }
  throw new Error(`${relative(PROJECT_ROOT, from)}: cannot resolve ${specifier}`);
}

/** Scans `entry` (absolute, or relative to the project root) and every project module it imports. */
export function scanSdkCalls(entry: string): SdkScan {
  const calls: SdkCall[] = [];
  const unmapped: string[] = [];
  const seen = new Set<string>();
  const queue = [resolve(PROJECT_ROOT, entry)];
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const file = relative(PROJECT_ROOT, path);
    const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);

    const onModule = (specifier: string, clause: ts.ImportClause | ts.NamedExportBindings | undefined, typeOnly: boolean, where: ts.Node) => {
      const at = `${file}:${source.getLineAndCharacterOfPosition(where.getStart()).line + 1}`;
      if (specifier.startsWith('.')) {
        queue.push(resolveModule(path, specifier));
        return;
      }
      if (typeOnly || specifier.startsWith('node:')) return;
      if (specifier.startsWith('@aws-sdk/')) {
        const prefix = IAM_PREFIX_OF_CLIENT[specifier];
        if (!prefix) {
          unmapped.push(`${at}: ${specifier} has no IAM prefix in IAM_PREFIX_OF_CLIENT`);
          return;
        }
        const bindings = clause && ts.isImportClause(clause) ? clause.namedBindings : clause;
        if (!bindings || (!ts.isNamedImports(bindings) && !ts.isNamedExports(bindings)) || (clause && ts.isImportClause(clause) && clause.name)) {
          unmapped.push(`${at}: import commands from ${specifier} by name, so the permission test can see them`);
          return;
        }
        for (const element of bindings.elements) {
          if (element.isTypeOnly) continue;
          const name = (element.propertyName ?? element.name).text;
          if (name.endsWith('Command')) calls.push({ action: `${prefix}:${name.slice(0, -'Command'.length)}`, file: at });
          else if (!/Client$|Exception$/.test(name)) unmapped.push(`${at}: ${name} from ${specifier} is neither a command nor a client`);
        }
        return;
      }
      if (!(specifier in PACKAGES_WITHOUT_AWS_CALLS)) unmapped.push(`${at}: ${specifier} is not known to make no AWS API call (PACKAGES_WITHOUT_AWS_CALLS)`);
    };

    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const clause = node.importClause;
        const typeOnly =
          clause?.isTypeOnly === true ||
          (clause?.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            !clause.name &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly));
        onModule(node.moduleSpecifier.text, clause, typeOnly, node);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        onModule(node.moduleSpecifier.text, node.exportClause, node.isTypeOnly, node);
      } else if (
        ts.isCallExpression(node) &&
        (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
      ) {
        unmapped.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: a dynamic import the scan cannot follow`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { calls, files: [...seen].map((p) => relative(PROJECT_ROOT, p)).sort(), unmapped };
}
