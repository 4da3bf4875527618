// The kind of target the handlers name in a test: ATOMIC_PUBLISH_TARGET,
// which vitest.config.ts sets per project, so that the workflow tests run
// against a Serverless workgroup (the default: what cdk.json deploys to) and
// against a provisioned cluster, each with its own catalog
// (local/data-api/system-views.ts).
import type { TargetKind } from '../../local/data-api/system-views.ts';

const KINDS: readonly TargetKind[] = ['workgroup', 'cluster'];

export function suiteTargetKind(env: NodeJS.ProcessEnv = process.env): TargetKind {
  const value = env.ATOMIC_PUBLISH_TARGET ?? 'workgroup';
  if (!(KINDS as readonly string[]).includes(value)) {
    throw new Error(`ATOMIC_PUBLISH_TARGET must be one of ${KINDS.join(', ')}, not ${JSON.stringify(value)}`);
  }
  return value as TargetKind;
}
