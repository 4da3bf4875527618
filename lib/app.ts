import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Duration, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { contextString, warehouseTargetFromContext } from '../domain/warehouse-target.ts';
import { pipelines } from '../pipelines/index.ts';
import { AtomicPublishStack } from './atomic-publish-stack.ts';
import { PROJECT_ROOT } from './project.ts';

export const STACK_NAME = 'AtomicPublish';

export interface BuildAppOptions {
  /**
   * Context over cdk.json's (and, under the CDK CLI, under the CLI's):
   * `warehouse`, `secretArn`, `secretKmsKeyArn`, `handlerRoleName`, `alarmEmail` (one address or several,
   * comma-separated), `alarmHttpsUrls` (comma-separated https:// URLs), `freshnessMonitorRateMinutes`, `liveWatchRateMinutes`.
   */
  readonly context?: Record<string, unknown>;
  /**
   * Bundle the handlers with esbuild. Off in tests and for the local runner,
   * which only needs the template.
   * @default true
   */
  readonly bundling?: boolean;
  /**
   * Where the cloud assembly goes. An App makes its directory when it is
   * created, synthesized or not, so an in-process caller that does not want
   * one left behind passes a directory it removes itself.
   * @default - the CDK CLI's output directory under the CLI; otherwise a new `cdk.out*` directory in the system temp directory, left there
   */
  readonly outdir?: string;
}

function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(`${PROJECT_ROOT}/cdk.json`, 'utf8')) as { context?: Record<string, unknown> };
  return cdkJson.context ?? {};
}

/**
 * The CDK app with the `AtomicPublish` stack, for `cdk synth` (bin/app.ts),
 * tests and the local runner. cdk.json's context is the base layer, so an
 * in-process synth sees the same defaults as the CLI.
 */
export function buildApp(options: BuildAppOptions = {}): { app: App; stack: AtomicPublishStack } {
  const app = new App({
    context: { ...cdkJsonContext(), ...options.context },
    ...(options.outdir !== undefined ? { outdir: options.outdir } : {}),
    // Applied after the CLI's context, so "no bundling" always wins.
    ...(options.bundling === false ? { postCliContext: { 'aws:cdk:bundling-stacks': [] } } : {}),
  });
  const node = app.node;
  const alarmEmails = contextList(node.tryGetContext('alarmEmail'), 'alarmEmail');
  const alarmHttpsUrls = contextList(node.tryGetContext('alarmHttpsUrls'), 'alarmHttpsUrls');
  const handlerRoleName = contextString(node.tryGetContext('handlerRoleName'), 'handlerRoleName');
  const secretKmsKeyArn = contextString(node.tryGetContext('secretKmsKeyArn'), 'secretKmsKeyArn');
  const monitorRate = contextMinutes(node.tryGetContext('freshnessMonitorRateMinutes'), 'freshnessMonitorRateMinutes');
  const watchRate = contextMinutes(node.tryGetContext('liveWatchRateMinutes'), 'liveWatchRateMinutes');
  const stack = new AtomicPublishStack(app, STACK_NAME, {
    description: 'atomic-publish: rebuild Redshift tables so readers see old data or new data, never a mix',
    warehouse: {
      ...warehouseTargetFromContext(node.tryGetContext('warehouse'), node.tryGetContext('secretArn')),
      ...(secretKmsKeyArn ? { secretKmsKeyArn } : {}),
    },
    pipelines,
    ...(handlerRoleName ? { handlerRoleName } : {}),
    ...(alarmEmails.length + alarmHttpsUrls.length > 0 ? { subscriptions: { emails: alarmEmails, httpsUrls: alarmHttpsUrls } } : {}),
    ...(monitorRate !== undefined ? { freshnessMonitorRate: Duration.minutes(monitorRate) } : {}),
    ...(watchRate !== undefined ? { liveWatchRate: Duration.minutes(watchRate) } : {}),
  });
  // cdk-nag's AWS Solutions rules run at every synthesis; an unacknowledged
  // finding fails it (each acknowledgement sits on its construct, with its reason).
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}

/** A comma-separated list from context (or a JSON list, as cdk.json may hold it); empty when absent. */
function contextList(value: unknown, key: string): string[] {
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.map((v) => v.trim()).filter(Boolean);
  const text = contextString(value, key);
  return text === undefined
    ? []
    : text
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
}

/** A whole number of minutes from context (`-c key=5` arrives as a string); unset when absent. */
function contextMinutes(value: unknown, key: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const minutes = typeof value === 'string' ? Number(value) : value;
  if (typeof minutes !== 'number' || !Number.isInteger(minutes) || minutes < 1)
    throw new Error(`context ${key} must be a whole number of minutes, got ${JSON.stringify(value)}`);
  return minutes;
}

/**
 * The stack's template, synthesized in-process (the local runner's way):
 * the cloud assembly goes to a temporary directory that is removed again.
 */
export function synthesizeStackTemplate(options: Omit<BuildAppOptions, 'outdir'> = {}): unknown {
  const outdir = mkdtempSync(join(tmpdir(), 'atomic-publish-synth-'));
  try {
    const { app, stack } = buildApp({ ...options, outdir });
    return app.synth().getStackByName(stack.stackName).template;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
