// `npx cdk synth` as a user runs it: offline, no credentials, every handler
// bundled by the local esbuild into a deployable asset.
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROJECT_ROOT } from '../../lib/project.ts';

const out = mkdtempSync(join(tmpdir(), 'atomic-publish-synth-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

interface Synthesized {
  run: SpawnSyncReturns<string>;
  /** The Lambda functions of the template with a handler entry (none if the synth failed). */
  functions: { Type: string; Metadata?: Record<string, string> }[];
}
/** The asset directory of the function whose handler entry is `entry`. */
const assetOf = ({ functions }: Synthesized, entry: string): string | undefined => {
  const fn = functions.find((f) => f.Metadata!['atomic-publish:entry'] === entry);
  return fn && join(out, fn.Metadata!['aws:asset:path']!);
};

describe('cdk synth', () => {
  // One synth for the describe (it takes minutes); its tests only read what it wrote.
  let synthesized: Synthesized;
  beforeAll(() => {
    const env = {
      ...process.env,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_ACCESS_KEY_ID: '',
      AWS_SECRET_ACCESS_KEY: '',
      AWS_PROFILE: '',
      CDK_DISABLE_VERSION_CHECK: 'true',
    };
    const run = spawnSync('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', out], { cwd: PROJECT_ROOT, env, encoding: 'utf8', timeout: 170_000 });
    const templateFile = join(out, 'AtomicPublish.template.json');
    const template =
      run.status === 0 && existsSync(templateFile)
        ? (JSON.parse(readFileSync(templateFile, 'utf8')) as { Resources: Record<string, { Type: string; Metadata?: Record<string, string> }> })
        : { Resources: {} };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['atomic-publish:entry']);
    synthesized = { run, functions };
  });

  it('produces the deployable template offline with every Lambda handler bundled', () => {
    const { run, functions } = synthesized;
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);

    expect(functions.map((f) => f.Metadata!['atomic-publish:entry']).sort()).toEqual([
      'functions/cancel-orphans/index.ts',
      'functions/cleanup/index.ts',
      'functions/emit-metrics/index.ts',
      'functions/freshness-monitor/index.ts',
      'functions/load-chunk/index.ts',
      'functions/plan/index.ts',
      'functions/publish-group/index.ts',
      'functions/publish/index.ts',
      'functions/reconcile/index.ts',
      'functions/record-failure/index.ts',
      'functions/rollback/index.ts',
      'functions/start-run/index.ts',
    ]);
    for (const fn of functions) {
      const asset = join(out, fn.Metadata!['aws:asset:path']!);
      expect(existsSync(asset), asset).toBe(true);
      const bundle = readdirSync(asset).find((f) => f.endsWith('.mjs'));
      expect(bundle, `bundle in ${asset}`).toBeDefined();
      // The SDK is bundled (pinned), not taken from the Lambda runtime.
      const client = fn.Metadata!['atomic-publish:entry'] === 'functions/start-run/index.ts' ? 'SFNClient' : 'RedshiftDataClient';
      expect(readFileSync(join(asset, bundle!), 'utf8')).toContain(client);
    }
  });

  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('bundles a Plan handler that loads as an ES module and rejects bad input with the error name Step Functions matches', async () => {
    const { run } = synthesized;
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const asset = assetOf(synthesized, 'functions/plan/index.ts');
    expect(asset, 'the synth produced the Plan bundle').toBeDefined();
    const bundle = readdirSync(asset!).find((f) => f.endsWith('.mjs'))!;
    const { handler } = (await import(pathToFileURL(join(asset!, bundle)).href)) as { handler: (event: unknown, context: unknown) => Promise<unknown> };
    vi.stubEnv('WAREHOUSE_DATABASE', 'dev');
    vi.stubEnv('WAREHOUSE_WORKGROUP', 'analytics');
    const context = { functionName: 'Plan', awsRequestId: 'test', getRemainingTimeInMillis: () => 60_000 };

    const error = await handler({ input: { pipeline: 'no_such_pipeline' }, startedAt: '2026-04-01T06:00:00Z' }, context).then(
      () => undefined,
      (e: unknown) => e as Error,
    );

    expect(error?.name).toBe('ValidationError');
    expect(error?.message).toBe('unknown pipeline "no_such_pipeline"; known pipelines: sales_order_lines, daily_sales');
  });
});
