// Every AWS API call a step handler makes is allowed by the policies of the
// role it runs as, in the synthesized template, for every way of signing in to
// the warehouse. The calls come from the handlers' source (sdk-calls.ts: every
// command imported from an SDK client, through every module an entry imports)
// plus the calls the Data API makes with the caller's credentials for the
// target in the function's environment; the policies are evaluated by
// iam-policy.ts. A command added to the code without a grant fails here.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type WarehouseTarget, warehouseTargetFromEnv } from '../../domain/warehouse-target.ts';
import { buildApp } from '../../lib/app.ts';
import {
  ENTRY_METADATA_KEY,
  MONITOR_STEPS,
  type MonitorStepName,
  STARTER_STEPS,
  STEP_NAMES,
  type StarterStepName,
  stepEntry,
} from '../../lib/workflow-steps.ts';
import { useCdkOutdir } from './cdk-outdir.ts';
import { isAllowed, PSEUDO, type Request, resolveValue, roleStatements, type Statement, stateMachineRefs } from './iam-policy.ts';
import { scanSdkCalls } from './sdk-calls.ts';

const outdir = useCdkOutdir();
const SECRET_ARN = 'arn:aws:secretsmanager:eu-central-1:111122223333:secret:warehouse-AbCdEf';
const WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-central-1:111122223333:workgroup/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
/** The workgroup "analytics" as IAM names it when the stack is not told its ARN. */
const SOME_WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-central-1:111122223333:workgroup/9a8b7c6d-0000-4000-8000-000000000001';
const KEY_ARN = 'arn:aws:kms:eu-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const { 'AWS::Region': REGION, 'AWS::AccountId': ACCOUNT } = PSEUDO;

interface AuthPath {
  readonly context: Record<string, unknown>;
  /** The workgroup's real ARN (the stack may not know it). */
  readonly workgroupArn?: string;
  readonly kmsKeyArn?: string;
}

const AUTH_PATHS: Record<string, AuthPath> = {
  'workgroup, IAM credentials, ARN unknown (cdk.json default)': { context: {}, workgroupArn: SOME_WORKGROUP_ARN },
  'workgroup, IAM credentials, ARN given': {
    context: { warehouse: { workgroupName: 'analytics', database: 'dev', workgroupArn: WORKGROUP_ARN } },
    workgroupArn: WORKGROUP_ARN,
  },
  'workgroup with a secret under a customer-managed key': {
    context: { warehouse: { workgroupName: 'analytics', database: 'dev', workgroupArn: WORKGROUP_ARN }, secretArn: SECRET_ARN, secretKmsKeyArn: KEY_ARN },
    workgroupArn: WORKGROUP_ARN,
    kmsKeyArn: KEY_ARN,
  },
  'cluster with a secret': { context: { warehouse: { clusterIdentifier: 'analytics-cluster', database: 'dev' }, secretArn: SECRET_ARN } },
  'cluster with a database user (DbUser)': { context: { warehouse: { clusterIdentifier: 'analytics-cluster', database: 'dev', dbUser: 'publisher' } } },
};

/** A function as IAM sees its calls: the role it runs as (logical id) and the function (Lambda names the session after it). */
interface Caller {
  readonly roleId: string;
  readonly fn: string;
}

/** The caller's aws:userid: the role's unique id (as the template's `Fn::GetAtt [role, RoleId]` resolves) and the session. */
const userId = ({ roleId, fn }: Caller) => `<${roleId}.RoleId>:${fn}`;

/** The request an explicit SDK call makes, with the resource IAM authorizes it against. */
function explicitRequest(action: string, target: WarehouseTarget, path: AuthPath, caller: Caller, stateMachineArn: string): Request {
  // A statement another function of the role submitted: RecordFailure and CancelOrphans describe and cancel LoadChunk's INSERTs.
  const own = { 'aws:userid': userId(caller), 'redshift-data:statement-owner-iam-userid': userId({ ...caller, fn: 'AnotherFunctionOfTheRole' }) };
  switch (action) {
    case 'redshift-data:ExecuteStatement':
    case 'redshift-data:BatchExecuteStatement':
      return {
        action,
        resource: target.workgroupName ? path.workgroupArn! : `arn:aws:redshift:${REGION}:${ACCOUNT}:cluster:${target.clusterIdentifier}`,
        context: own,
      };
    // No resource type: authorized on "*", for statements the role submitted.
    case 'redshift-data:DescribeStatement':
    case 'redshift-data:GetStatementResult':
    case 'redshift-data:CancelStatement':
    case 'redshift-data:ListStatements':
      return { action, resource: '*', context: own };
    // No resource type; the monitor writes into the project's namespace.
    case 'cloudwatch:PutMetricData':
      return { action, resource: '*', context: { 'aws:userid': userId(caller), 'cloudwatch:namespace': 'AtomicPublish' } };
    // EmitMetrics' publication event: on the default bus, as source atomic-publish.
    case 'events:PutEvents':
      return {
        action,
        resource: `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/default`,
        context: { 'aws:userid': userId(caller), 'events:source': 'atomic-publish' },
      };
    // Plan asks of the execution holding a lease: one of this state machine's.
    case 'states:DescribeExecution':
      return {
        action,
        resource: `${stateMachineArn.replace(':stateMachine:', ':execution:')}:a-run-holding-the-lease`,
        context: { 'aws:userid': userId(caller) },
      };
    default:
      throw new Error(`no resource known for ${action}: add it to explicitRequest, and grant it`);
  }
}

/** The request a starter's SDK call makes: StartExecution of the state machine its environment names. */
function starterRequest(action: string, env: Record<string, string>, caller: Caller): Request {
  if (action !== 'states:StartExecution') throw new Error(`no resource known for ${action}: add it to starterRequest, and grant it`);
  return { action, resource: env.STATE_MACHINE_ARN!, context: { 'aws:userid': userId(caller) } };
}

/**
 * What the Data API does with the caller's credentials to sign in: read the
 * secret (decrypting it with its key through Secrets Manager), or get
 * temporary credentials for the cluster's DbUser or the workgroup's IAM user
 * ("Authorizing access to the Amazon Redshift Data API",
 * https://docs.aws.amazon.com/redshift/latest/mgmt/data-api-access.html).
 */
function implicitRequests(target: WarehouseTarget, path: AuthPath, caller: Caller): Request[] {
  const context = { 'aws:userid': userId(caller) };
  if (target.secretArn) {
    return [
      { action: 'secretsmanager:GetSecretValue', resource: target.secretArn, context },
      ...(path.kmsKeyArn
        ? [{ action: 'kms:Decrypt', resource: path.kmsKeyArn, context: { ...context, 'kms:ViaService': `secretsmanager.${REGION}.amazonaws.com` } }]
        : []),
    ];
  }
  if (target.dbUser) {
    const cluster = `arn:aws:redshift:${REGION}:${ACCOUNT}`;
    return [
      { action: 'redshift:GetClusterCredentials', resource: `${cluster}:dbuser:${target.clusterIdentifier}/${target.dbUser}`, context },
      { action: 'redshift:GetClusterCredentials', resource: `${cluster}:dbname:${target.clusterIdentifier}/${target.database}`, context },
    ];
  }
  return [{ action: 'redshift-serverless:GetCredentials', resource: path.workgroupArn!, context }];
}

type TemplateJson = { Resources: Record<string, { Type: string; Metadata?: Record<string, string>; Properties: Record<string, unknown> }> };

interface FunctionUnderTest {
  readonly entry: string;
  readonly functionName: string;
  /** Logical id of the role it runs as. */
  readonly roleId: string;
  readonly caller: Caller;
  readonly requests: Request[];
  readonly statements: Statement[];
}

const synthesized: Record<string, FunctionUnderTest[]> = {};
/** The functions that start executions, not warehouse statements (StartRun): no warehouse target in their environment. */
const STARTER_ENTRIES = new Set((Object.keys(STARTER_STEPS) as StarterStepName[]).map(stepEntry));
/** The freshness monitor: the Data API as the handlers use it, and PutMetricData. */
const MONITOR_ENTRIES = new Set((Object.keys(MONITOR_STEPS) as MonitorStepName[]).map(stepEntry));
const scans = Object.fromEntries([...STEP_NAMES.map(stepEntry), ...STARTER_ENTRIES, ...MONITOR_ENTRIES].map((entry) => [entry, scanSdkCalls(entry)]));

beforeAll(() => {
  for (const [name, path] of Object.entries(AUTH_PATHS)) {
    const { app, stack } = buildApp({ bundling: false, outdir: join(outdir, String(Object.keys(synthesized).length)), context: path.context });
    const template = app.synth().getStackByName(stack.stackName).template as TemplateJson;
    const stateMachineArn = Object.values(stateMachineRefs(template as never))[0]!;
    synthesized[name] = Object.entries(template.Resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.[ENTRY_METADATA_KEY])
      .map(([functionName, r]) => {
        const entry = r.Metadata![ENTRY_METADATA_KEY]!;
        const env = resolveValue((r.Properties.Environment as { Variables: unknown }).Variables, stateMachineRefs(template as never)) as Record<string, string>;
        const [roleId] = (r.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
        const caller = { roleId: roleId!, fn: functionName };
        if (STARTER_ENTRIES.has(entry)) {
          // Lambda sends a failed asynchronous invocation's record to the on-failure destination with the function's role.
          const destinations = Object.values(template.Resources)
            .filter((c) => c.Type === 'AWS::Lambda::EventInvokeConfig' && (c.Properties.FunctionName as { Ref?: string }).Ref === functionName)
            .map((c) => String(resolveValue((c.Properties.DestinationConfig as { OnFailure: { Destination: unknown } }).OnFailure.Destination)));
          const requests = [
            ...scans[entry]!.calls.map((c) => starterRequest(c.action, env, caller)),
            ...destinations.map((queue) => ({ action: 'sqs:SendMessage', resource: queue, context: { 'aws:userid': userId(caller) } })),
          ];
          return { entry, functionName, caller, roleId: roleId!, requests, statements: roleStatements(template, roleId) };
        }
        const target = warehouseTargetFromEnv(env);
        return {
          entry,
          functionName,
          caller,
          roleId: roleId!,
          requests: [
            ...scans[entry]!.calls.map((c) => explicitRequest(c.action, target, path, caller, stateMachineArn)),
            ...implicitRequests(target, path, caller),
          ],
          statements: roleStatements(template, roleId),
        };
      });
  }
});

describe("the SDK calls in the handlers' code", () => {
  it('are all commands of SDK clients the scan can map to IAM actions, in every handler', () => {
    for (const [entry, scan] of Object.entries(scans)) {
      expect(scan.unmapped, entry).toEqual([]);
      if (STARTER_ENTRIES.has(entry)) {
        expect(new Set(scan.calls.map((c) => c.action)), entry).toEqual(new Set(['states:StartExecution']));
        continue;
      }
      // The scan reached the shared Data API client and found its commands.
      expect(scan.files, entry).toContain('functions/commons/warehouse.ts');
      expect(new Set(scan.calls.map((c) => c.action)), entry).toEqual(
        new Set([
          'redshift-data:ExecuteStatement',
          'redshift-data:BatchExecuteStatement',
          'redshift-data:DescribeStatement',
          'redshift-data:GetStatementResult',
          'redshift-data:CancelStatement',
          'redshift-data:ListStatements',
          ...(MONITOR_ENTRIES.has(entry) ? ['cloudwatch:PutMetricData'] : []),
          ...(entry === stepEntry('EmitMetrics') || MONITOR_ENTRIES.has(entry) ? ['events:PutEvents'] : []),
          ...(entry === stepEntry('Plan') ? ['states:DescribeExecution'] : []),
        ]),
      );
    }
  });

  it('finds a command a module adds, and flags what it cannot map', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atomic-publish-scan-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'cancel.ts'),
      "import { CancelStatementCommand, type ColumnMetadata } from '@aws-sdk/client-redshift-data';\nexport const cancel = (id: string) => new CancelStatementCommand({ Id: id });\n",
    );
    writeFileSync(
      join(dir, 'entry.ts'),
      [
        "export { cancel } from './cancel.ts';",
        "import * as s3 from '@aws-sdk/client-s3';",
        "import * as rd from '@aws-sdk/client-redshift-data';",
        "import { getParameter } from '@aws-lambda-powertools/parameters/ssm';",
        "export const later = () => import('./cancel.ts');",
      ].join('\n'),
    );

    const scan = scanSdkCalls(join(dir, 'entry.ts'));

    expect(scan.calls.map((c) => c.action)).toEqual(['redshift-data:CancelStatement']);
    expect(scan.unmapped).toEqual([
      expect.stringMatching(/entry\.ts:2: @aws-sdk\/client-s3 has no IAM prefix/),
      expect.stringMatching(/entry\.ts:3: import commands from @aws-sdk\/client-redshift-data by name/),
      expect.stringMatching(/entry\.ts:4: @aws-lambda-powertools\/parameters\/ssm is not known to make no AWS API call/),
      expect.stringMatching(/entry\.ts:5: a dynamic import the scan cannot follow/),
    ]);
  });
});

const XRAY_WRITE = ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'];

describe.each(Object.keys(AUTH_PATHS))('the handler role, %s', (name) => {
  it("allows every call of every handler: its SDK commands and the Data API's sign-in", () => {
    const functions = synthesized[name]!;
    expect(functions.map((f) => f.entry).sort()).toEqual([...STEP_NAMES.map(stepEntry), ...STARTER_ENTRIES, ...MONITOR_ENTRIES].sort());
    for (const fn of functions) {
      for (const request of fn.requests) expect(isAllowed(fn.statements, request), `${fn.entry}: ${request.action} on ${request.resource}`).toBe(true);
    }
  });

  it('allows nothing else: every action it grants beyond writing its logs is one a handler needs', () => {
    for (const fn of synthesized[name]!) {
      // What the functions of the same role call: the starter's role allows no Data API call, the handlers' no StartExecution.
      const needed = new Set(synthesized[name]!.filter((f) => f.roleId === fn.roleId).flatMap((f) => f.requests.map((r) => r.action)));
      const granted = fn.statements.filter((s) => s.Effect === 'Allow').flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action!]));
      // Besides its log: the X-Ray segments of active tracing (lib/step-handler.ts).
      const extra = granted.filter((action) => !needed.has(action) && !['logs:CreateLogStream', 'logs:PutLogEvents', ...XRAY_WRITE].includes(action));
      expect(extra, fn.entry).toEqual([]);
    }
  });

  it('refuses a call no handler makes: describing or cancelling a statement of another role', () => {
    const fn = synthesized[name]!.find((f) => !STARTER_ENTRIES.has(f.entry))!;
    const other = { 'aws:userid': userId(fn.caller), 'redshift-data:statement-owner-iam-userid': 'AROAOTHERROLE:someone' };
    const own = { ...other, 'redshift-data:statement-owner-iam-userid': userId(fn.caller) };
    const sameSessionNameOtherRole = { ...other, 'redshift-data:statement-owner-iam-userid': userId({ ...fn.caller, roleId: 'OtherRole' }) };
    expect(isAllowed(fn.statements, { action: 'redshift-data:CancelStatement', resource: '*', context: sameSessionNameOtherRole })).toBe(false);
    expect(isAllowed(fn.statements, { action: 'redshift-data:DescribeStatement', resource: '*', context: own })).toBe(true);
    expect(isAllowed(fn.statements, { action: 'redshift-data:CancelStatement', resource: '*', context: own })).toBe(true);
    // Listing is allowed: the Data API lists only the caller's own statements.
    expect(isAllowed(fn.statements, { action: 'redshift-data:ListStatements', resource: '*', context: own })).toBe(true);
    expect(isAllowed(fn.statements, { action: 'redshift-data:DescribeStatement', resource: '*', context: other })).toBe(false);
    expect(isAllowed(fn.statements, { action: 'redshift-data:CancelStatement', resource: '*', context: other })).toBe(false);
    expect(isAllowed(fn.statements, { action: 'sns:Publish', resource: `arn:aws:sns:${REGION}:${ACCOUNT}:anything` })).toBe(false);
  });

  it('lets the handlers and the monitor (redelivering) put events on the default bus as source atomic-publish only, and StartRun put none', () => {
    const bus = (busName: string) => `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${busName}`;
    for (const sender of synthesized[name]!.filter((f) => f.entry === stepEntry('EmitMetrics') || MONITOR_ENTRIES.has(f.entry))) {
      const put = (resource: string, source: string) => ({
        action: 'events:PutEvents',
        resource,
        context: { 'aws:userid': userId(sender.caller), 'events:source': source },
      });
      expect(isAllowed(sender.statements, put(bus('default'), 'atomic-publish')), sender.entry).toBe(true);
      expect(isAllowed(sender.statements, put(bus('default'), 'aws.states')), sender.entry).toBe(false);
      expect(isAllowed(sender.statements, put(bus('someone-elses'), 'atomic-publish')), sender.entry).toBe(false);
    }
    for (const other of synthesized[name]!.filter((f) => STARTER_ENTRIES.has(f.entry))) {
      const put = { action: 'events:PutEvents', resource: bus('default'), context: { 'aws:userid': userId(other.caller), 'events:source': 'atomic-publish' } };
      expect(isAllowed(other.statements, put), other.entry).toBe(false);
    }
  });

  it('lets the freshness monitor write metrics into the AtomicPublish namespace only, and no step handler write any', () => {
    const monitor = synthesized[name]!.find((f) => MONITOR_ENTRIES.has(f.entry))!;
    const handler = synthesized[name]!.find((f) => !MONITOR_ENTRIES.has(f.entry) && !STARTER_ENTRIES.has(f.entry))!;
    expect(monitor.roleId).not.toBe(handler.roleId);
    const put = (namespace: string) => ({
      action: 'cloudwatch:PutMetricData',
      resource: '*',
      context: { 'aws:userid': userId(monitor.caller), 'cloudwatch:namespace': namespace },
    });
    expect(isAllowed(monitor.statements, put('AtomicPublish'))).toBe(true);
    expect(isAllowed(monitor.statements, put('SomeoneElses'))).toBe(false);
    expect(isAllowed(handler.statements, put('AtomicPublish'))).toBe(false);
    expect(isAllowed(monitor.statements, { action: 'states:StartExecution', resource: '*' })).toBe(false);
  });
});
