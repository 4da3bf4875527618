// cdk-nag's AWS Solutions rules run inside every synthesis of the app
// (buildApp): `cdk synth` fails on a finding nobody acknowledged. These tests
// synthesize the app for each way of signing in to the warehouse, pin the
// acknowledgements and their reasons, and show that a new finding fails.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CfnResource, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../lib/app.ts';
import { useCdkOutdir } from './cdk-outdir.ts';

const outdir = useCdkOutdir();
const SECRET_ARN = 'arn:aws:secretsmanager:eu-central-1:111122223333:secret:warehouse-AbCdEf';
const WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-central-1:111122223333:workgroup/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
const KEY_ARN = 'arn:aws:kms:eu-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';

interface ValidationReport {
  pluginReports: { pluginName: string; violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[] }[];
}
const violationsIn = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, 'validation-report.json'), 'utf8')) as ValidationReport).pluginReports.flatMap((r) => r.violations);

let apps = 0;
const appWith = (context: Record<string, unknown> = {}) => {
  const dir = join(outdir, `app-${++apps}`);
  return { dir, ...buildApp({ bundling: false, outdir: dir, context }) };
};

/** Every acknowledgement in the tree: construct path (below the stack) -> rule id -> reason. */
function acknowledgements(root: IConstruct): Record<string, Record<string, string>> {
  const found: Record<string, Record<string, string>> = {};
  for (const construct of root.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      const path = construct.node.path.replace(/^AtomicPublish\//, '');
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        // A rule acknowledged twice on one construct (for two grants): both reasons.
        const rule = id.replace(/^Annotation::/, '');
        const rules = (found[path] ??= {});
        rules[rule] = rules[rule] === undefined ? reason : `${rules[rule]} | ${reason}`;
      }
    }
  }
  return found;
}

describe('cdk-nag AWS Solutions checks', () => {
  it.each<[string, Record<string, unknown>]>([
    ['the cdk.json default: a workgroup by name, IAM credentials', {}],
    [
      'a workgroup by ARN, with a secret under a customer-managed key',
      { warehouse: { workgroupName: 'analytics', database: 'dev', workgroupArn: WORKGROUP_ARN }, secretArn: SECRET_ARN, secretKmsKeyArn: KEY_ARN },
    ],
    [
      'a cluster with a database user, and a handler role name of its own',
      { warehouse: { clusterIdentifier: 'analytics-cluster', database: 'dev', dbUser: 'publisher' }, handlerRoleName: 'analytics-publisher' },
    ],
    ['a cluster with a secret', { warehouse: { clusterIdentifier: 'analytics-cluster', database: 'dev' }, secretArn: SECRET_ARN }],
  ])('leave no unacknowledged finding for %s', (_, context) => {
    const { app, dir } = appWith(context);
    expect(() => app.synth()).not.toThrow();
    expect(violationsIn(dir)).toEqual([]);
  });

  it('fail the synthesis on a finding nobody acknowledged, naming the rule and the construct', () => {
    const { app, stack, dir } = appWith();
    stack.handlerRole.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::exports/*'] }));

    expect(() => app.synth()).toThrow(/AwsSolutions-IAM5\[Resource::arn:aws:s3:::exports\/\*\]/);

    const violations = violationsIn(dir);
    expect(violations.map((v) => v.ruleName)).toEqual(['AwsSolutions-IAM5[Resource::arn:aws:s3:::exports/*]']);
    expect(violations[0]!.violatingConstructs.map((c) => c.constructPath)).toEqual(['AtomicPublish/Workflow/HandlerRole/DefaultPolicy/Resource']);
  });

  it('are acknowledged only where a finding cannot be fixed, each on its construct with its reason', () => {
    const { stack } = appWith();
    const machine = stack.stateMachine.node.defaultChild as CfnResource;
    const STATE_MACHINE_NAME = JSON.stringify({ 'Fn::Select': [6, { 'Fn::Split': [':', { Ref: stack.resolve(stack.getLogicalId(machine)) }] }] });
    const found = acknowledgements(stack);
    const l1 = Object.fromEntries(
      ['Plan', 'LoadChunk', 'Reconcile', 'Publish', 'Rollback', 'PublishGroup', 'EmitMetrics', 'Cleanup', 'RecordFailure', 'CancelOrphans'].map((state) => [
        `Workflow/${state}Function`,
        ['AwsSolutions-L1'],
      ]),
    );
    expect(Object.fromEntries(Object.entries(found).map(([path, rules]) => [path, Object.keys(rules).sort()]))).toEqual({
      ...l1,
      'Schedules/StartRunFunction': ['AwsSolutions-L1'],
      // The missed-starts queue is itself a dead-letter queue (of the schedules and of StartRun's async invocations).
      'Schedules/MissedStarts': ['AwsSolutions-SQS3'],
      // Active tracing's xray:PutTraceSegments and PutTelemetryRecords (no resource type); the other roles acknowledge Resource "*" already.
      'Schedules/StartRunRole': ['AwsSolutions-IAM5[Resource::*]'],
      'FreshnessMonitor/Function': ['AwsSolutions-L1'],
      'FreshnessMonitor/Role': [
        'AwsSolutions-IAM5[Resource::*]',
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:redshift-serverless:<AWS::Region>:<AWS::AccountId>:workgroup/*]',
      ],
      // PutMetricData has no resource type: the namespace condition scopes it.
      'FreshnessMonitor/PutMetricDataPolicy': ['AwsSolutions-IAM5[Resource::*]'],
      'Workflow/HandlerRole': [
        'AwsSolutions-IAM5[Resource::*]',
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:redshift-serverless:<AWS::Region>:<AWS::AccountId>:workgroup/*]',
      ],
      'Workflow/StateMachine/Role': ['AwsSolutions-IAM5[Resource::*]'],
      // Plan asks whether a lease's holder still runs: this state machine's executions only.
      'Workflow/LeaseHolderLookup': [
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${STATE_MACHINE_NAME}:*]`,
      ],
      // LoadWindows (a Distributed Map): its own executions and its Map Run's children.
      'Workflow/StateMachine/DistributedMapPolicy': [
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${STATE_MACHINE_NAME}/LoadWindows:*]`,
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${STATE_MACHINE_NAME}:*]`,
      ],
    });
    const reasons = Object.values(found).flatMap((rules) => Object.values(rules));
    for (const reason of reasons) expect(reason.length).toBeGreaterThan(80);
    expect(found['Workflow/HandlerRole']!['AwsSolutions-IAM5[Resource::*]']).toContain('statement-owner-iam-userid');
    for (const role of ['Workflow/HandlerRole', 'FreshnessMonitor/Role', 'Schedules/StartRunRole']) {
      expect(found[role]!['AwsSolutions-IAM5[Resource::*]'], role).toContain('xray:PutTraceSegments');
    }
    expect(found['Workflow/PlanFunction']!['AwsSolutions-L1']).toContain('nodejs22.x');
    expect(found['Schedules/StartRunRole']!['AwsSolutions-IAM5[Resource::*]']).toContain('xray:PutTraceSegments');
    expect(found['FreshnessMonitor/PutMetricDataPolicy']!['AwsSolutions-IAM5[Resource::*]']).toContain('cloudwatch:namespace');
  });

  it('no longer acknowledge the workgroup wildcard once the workgroup ARN is given', () => {
    const { stack } = appWith({ warehouse: { workgroupName: 'analytics', database: 'dev', workgroupArn: WORKGROUP_ARN } });
    expect(Object.keys(acknowledgements(stack)['Workflow/HandlerRole']!)).toEqual(['AwsSolutions-IAM5[Resource::*]']);
  });
});
