// A step handler bundled with the stack's own bundling options (STEP_BUNDLING)
// loads in a plain `node` process: the PostgreSQL parser it validates the
// pipeline specs with at import finds its WebAssembly module beside the bundle.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/project.ts';
import { STEP_BUNDLING } from '../../lib/step-handler.ts';
import { SAFETY_NET_MS } from '../support/safety-net.ts';

const out = mkdtempSync(join(tmpdir(), 'atomic-publish-bundle-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** What NodejsFunction does with STEP_BUNDLING when it bundles locally. */
async function bundle(entry: string, outputDir: string): Promise<string> {
  const outfile = join(outputDir, 'index.mjs');
  await build({
    entryPoints: [join(PROJECT_ROOT, entry)],
    bundle: true,
    platform: 'node',
    outfile,
    format: STEP_BUNDLING.format,
    target: STEP_BUNDLING.target,
    mainFields: STEP_BUNDLING.mainFields,
    banner: { js: STEP_BUNDLING.banner },
    external: STEP_BUNDLING.externalModules,
    minify: STEP_BUNDLING.minify,
    sourcemap: STEP_BUNDLING.sourceMap,
    logLevel: 'silent',
  });
  for (const command of STEP_BUNDLING.commandHooks.afterBundling(PROJECT_ROOT, outputDir)) {
    execFileSync('bash', ['-c', command], { cwd: PROJECT_ROOT });
  }
  return outfile;
}

// Loads the bundle, then asks the Plan handler for a pipeline that does not
// exist: the answer lists the known ones, which only exist once every spec
// passed the parser's checks at import.
const CHILD = `
const { handler } = await import(process.argv[1]);
process.env.WAREHOUSE_DATABASE = 'dev';
process.env.WAREHOUSE_WORKGROUP = 'analytics';
const context = { functionName: 'Plan', awsRequestId: 'test', getRemainingTimeInMillis: () => 60000 };
const error = await handler({ input: { pipeline: 'no_such_pipeline' }, startedAt: '2026-04-01T06:00:00Z' }, context).then(() => undefined, (e) => e);
console.log(JSON.stringify({ name: error?.name, message: error?.message }));
`;

describe('a bundled step handler', () => {
  it('carries the parser WebAssembly module and loads it in a node process of its own', async () => {
    const dir = join(out, 'plan');
    const file = await bundle('functions/plan/index.ts', dir);
    expect(existsSync(join(dir, 'libpg-query.wasm'))).toBe(true);

    const child = spawnSync(process.execPath, ['--input-type=module', '-e', CHILD, pathToFileURL(file).href], {
      cwd: tmpdir(),
      encoding: 'utf8',
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      timeout: SAFETY_NET_MS,
    });

    expect(child.stderr).not.toMatch(/wasm|Aborted/);
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout.trim().split('\n').at(-1)!)).toEqual({
      name: 'ValidationError',
      message: 'unknown pipeline "no_such_pipeline"; known pipelines: sales_order_lines, daily_sales',
    });
  });
});
