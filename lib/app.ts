import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { pipelines } from '../pipelines/index.ts';
import { AtomicPublishStack } from './atomic-publish-stack.ts';
import { PROJECT_ROOT } from './project.ts';
import type { WarehouseTarget } from './warehouse-target.ts';

export const STACK_NAME = 'AtomicPublish';

export interface BuildAppOptions {
  /** Context over cdk.json's (and, under the CDK CLI, under the CLI's): `warehouse`, `secretArn`, `alarmEmail`. */
  readonly context?: Record<string, unknown>;
  /**
   * Bundle the handlers with esbuild. Off in tests and for the local runner,
   * which only needs the template.
   * @default true
   */
  readonly bundling?: boolean;
}

const WAREHOUSE_KEYS = ['database', 'clusterIdentifier', 'secretArn', 'dbUser', 'workgroupName', 'workgroupArn'] as const;

/** Context values given on the command line (`-c warehouse='{...}'`) arrive as strings. */
function contextObject(value: unknown, key: string): Record<string, unknown> {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`context ${key} must be an object like {"workgroupName": "analytics", "database": "dev"}`);
  }
  return parsed as Record<string, unknown>;
}

function optionalString(value: unknown, key: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Error(`context ${key} must be a string`);
  return value;
}

/** The warehouse target from context `warehouse` (plus `secretArn`); unknown keys are rejected. */
export function warehouseFromContext(warehouse: unknown, secretArn?: unknown): WarehouseTarget {
  const raw = contextObject(warehouse ?? {}, 'warehouse');
  const unknown = Object.keys(raw).filter((key) => !(WAREHOUSE_KEYS as readonly string[]).includes(key));
  if (unknown.length > 0) throw new Error(`context warehouse: unknown keys ${unknown.join(', ')} (allowed: ${WAREHOUSE_KEYS.join(', ')})`);
  const target: Record<string, string> = {};
  for (const key of WAREHOUSE_KEYS) {
    const value = optionalString(raw[key], `warehouse.${key}`);
    if (value !== undefined) target[key] = value;
  }
  const arn = optionalString(secretArn, 'secretArn');
  if (arn !== undefined) target.secretArn = arn;
  return target as unknown as WarehouseTarget;
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
    // Applied after the CLI's context, so "no bundling" always wins.
    ...(options.bundling === false ? { postCliContext: { 'aws:cdk:bundling-stacks': [] } } : {}),
  });
  const node = app.node;
  const alarmEmail = optionalString(node.tryGetContext('alarmEmail'), 'alarmEmail');
  const stack = new AtomicPublishStack(app, STACK_NAME, {
    description: 'atomic-publish: rebuild Redshift tables so readers see old data or new data, never a mix',
    warehouse: warehouseFromContext(node.tryGetContext('warehouse'), node.tryGetContext('secretArn')),
    pipelines,
    ...(alarmEmail ? { alarmEmail } : {}),
  });
  return { app, stack };
}
