// `npx cdk synth` as a user runs it: offline, no credentials, every handler
// bundled by the local esbuild into a deployable asset.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/project.ts';

const out = mkdtempSync(join(tmpdir(), 'atomic-publish-synth-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));
const bundles: Record<string, string> = {};

describe('cdk synth', () => {
  it('produces the deployable template offline with every Lambda handler bundled', () => {
    const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '', CDK_DISABLE_VERSION_CHECK: 'true' };
    const run = spawnSync('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', out], { cwd: PROJECT_ROOT, env, encoding: 'utf8', timeout: 170_000 });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);

    const template = JSON.parse(readFileSync(join(out, 'AtomicPublish.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Metadata?: Record<string, string> }>;
    };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['atomic-publish:entry']);
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
      bundles[fn.Metadata!['atomic-publish:entry']!] = asset;
      expect(existsSync(asset), asset).toBe(true);
      const bundle = readdirSync(asset).find((f) => f.endsWith('.mjs'));
      expect(bundle, `bundle in ${asset}`).toBeDefined();
      // The SDK is bundled (pinned), not taken from the Lambda runtime.
      const client = fn.Metadata!['atomic-publish:entry'] === 'functions/start-run/index.ts' ? 'SFNClient' : 'RedshiftDataClient';
      expect(readFileSync(join(asset, bundle!), 'utf8')).toContain(client);
    }
  }, 180_000);

  it('bundles a Plan handler that loads as an ES module and rejects bad input with the error name Step Functions matches', async () => {
    const asset = bundles['functions/plan/index.ts'];
    expect(asset, 'the synth test above produced the bundle').toBeDefined();
    const bundle = readdirSync(asset!).find((f) => f.endsWith('.mjs'))!;
    const { handler } = (await import(pathToFileURL(join(asset!, bundle)).href)) as { handler: (event: unknown, context: unknown) => Promise<unknown> };
    process.env.WAREHOUSE_DATABASE = 'dev';
    process.env.WAREHOUSE_WORKGROUP = 'analytics';
    const context = { functionName: 'Plan', awsRequestId: 'test', getRemainingTimeInMillis: () => 60_000 };

    const error = await handler({ input: { pipeline: 'no_such_pipeline' }, startedAt: '2026-04-01T06:00:00Z' }, context).then(
      () => undefined,
      (e: unknown) => e as Error,
    );

    expect(error?.name).toBe('ValidationError');
    expect(error?.message).toBe('unknown pipeline "no_such_pipeline"; known pipelines: sales_order_lines');
  });
});
