import type { CfnElement } from 'aws-cdk-lib';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { LIVE_WATCH_EVENT } from '../../domain/live-watch/live-watch.ts';
import { buildApp } from '../../lib/app.ts';
import { AtomicPublishStack } from '../../lib/atomic-publish-stack.ts';
import { type AslDefinition, type AslState, localFunctionArn, stateMachineDefinition } from '../../lib/definition.ts';
import { CODE_VERSION } from '../../lib/project.ts';
import { LEASE_RECHECK_SECONDS } from '../../lib/publish-workflow.ts';
import { LAMBDA_STATE_NAMES, STEP_NAMES, type StepName, stepEntry } from '../../lib/workflow-steps.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { useCdkOutdir } from './cdk-outdir.ts';

const outdir = useCdkOutdir();
let stack: AtomicPublishStack;
let template: Template;
let asl: AslDefinition;
let taskFunctions: Record<string, string>;

const logicalId = (element: unknown) => stack.getLogicalId(element as CfnElement);
const functionId = (state: StepName) => logicalId(stack.functions[state].node.defaultChild);
const topicId = () => logicalId(stack.topic.node.defaultChild);
/** The states of a publish group's Maps, by name (nested: MemberLoadChunk is in MemberLoadChunks, in GroupMembers). */
const groupStates = (): Record<string, AslState> => {
  const members = asl.States.GroupMembers?.ItemProcessor?.States ?? {};
  return { ...members, ...(members.MemberLoadChunks?.ItemProcessor?.States ?? {}), ...(asl.States.GroupCleanup?.ItemProcessor?.States ?? {}) };
};
/** The states of a window's child execution (LoadWindows), nested ones included. */
const windowStates = (): Record<string, AslState> => {
  const window = asl.States.LoadWindows?.ItemProcessor?.States ?? {};
  return { ...window, ...(window.WindowLoadChunks?.ItemProcessor?.States ?? {}) };
};
const state = (name: string): AslState => {
  const found = asl.States[name] ?? asl.States.LoadChunks?.ItemProcessor?.States[name] ?? groupStates()[name] ?? windowStates()[name];
  if (!found) throw new Error(`no state ${name}`);
  return found;
};

beforeAll(() => {
  // The cdk.json default target (serverless workgroup "analytics", database "dev") and an on-call address.
  ({ stack } = buildApp({ bundling: false, outdir, context: { alarmEmail: 'oncall@example.com' } }));
  template = Template.fromStack(stack);
  ({ definition: asl, taskFunctions } = stateMachineDefinition(template.toJSON()));
});

describe('state machine', () => {
  it('follows Plan -> AlreadyPublished -> LoadChunks -> Reconcile -> CheckOnly -> Publish -> NewerDataLive -> EmitMetrics -> Cleanup -> Published on the happy path', () => {
    const path: string[] = [];
    let name: string | undefined = asl.StartAt;
    while (name) {
      path.push(name);
      const current: AslState = asl.States[name]!;
      name = current.Type === 'Choice' ? (current.Default as string) : current.Next;
    }
    expect(path).toEqual([
      'Input',
      'Plan',
      'AlreadyPublished',
      'LoadChunks',
      'Reconcile',
      'CheckOnly',
      'Publish',
      'NewerDataLive',
      'EmitMetrics',
      'Cleanup',
      'Published',
    ]);
    expect(asl.States.Published).toEqual({ Type: 'Succeed' });
  });

  it('ends a check after Reconcile: CheckOnly sends a plan with batch.check to CheckCleanup (the Cleanup function) and Checked, anything else to Publish', () => {
    expect(state('Reconcile').Next).toBe('CheckOnly');
    expect(state('CheckOnly')).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.plan.batch.check', IsPresent: true, Next: 'CheckCleanup' }],
      Default: 'Publish',
    });
    expect(state('CheckCleanup')).toMatchObject({
      Type: 'Task',
      Parameters: { 'batch.$': '$.plan.batch', 'executionId.$': '$$.Execution.Id' },
      ResultPath: '$.cleanup',
      Next: 'Checked',
    });
    expect(taskFunctions.CheckCleanup).toBe(taskFunctions.Cleanup);
    expect(asl.States.Checked).toMatchObject({ Type: 'Succeed' });
    // The windowed path joins Reconcile, so a long check ends the same way.
    expect(state('LoadWindows').Next).toBe('Reconcile');
  });

  it('has exactly the contract states, with LoadChunk inside the Map', () => {
    expect(Object.keys(asl.States).sort()).toEqual(
      [
        'AlreadyPublished',
        'Cleanup',
        'DescribeFailure',
        'EmitMetrics',
        'Failed',
        'Input',
        'LoadChunks',
        'NewerDataLive',
        'Notify',
        'NothingToPublish',
        'PipelineBusy',
        'LeaseHeld',
        'LeaseWait',
        'Plan',
        'Publish',
        'Published',
        'Reconcile',
        'RecordFailure',
        'Rollback',
        'Superseded',
        'GroupMembers',
        'PublishGroup',
        'GroupCleanup',
        'GroupPublished',
        'LoadWindows',
        'CheckOnly',
        'CheckCleanup',
        'Checked',
      ].sort(),
    );
    expect(Object.keys(state('LoadWindows').ItemProcessor!.States).sort()).toEqual(['PlanWindow', 'WindowLoadChunks', 'WindowLoaded']);
    expect(Object.keys(state('WindowLoadChunks').ItemProcessor!.States).sort()).toEqual(['WindowLoadChunk', 'WindowWaitForLoad']);
    expect(Object.keys(state('LoadChunks').ItemProcessor!.States).sort()).toEqual(['LoadChunk', 'WaitForLoad']);
    expect(Object.keys(state('GroupMembers').ItemProcessor!.States).sort()).toEqual(['MemberLoadChunks', 'MemberReconcile']);
    expect(Object.keys(state('MemberLoadChunks').ItemProcessor!.States).sort()).toEqual(['MemberLoadChunk', 'MemberWaitForLoad']);
    expect(Object.keys(state('GroupCleanup').ItemProcessor!.States).sort()).toEqual(['MemberCleanup', 'MemberEmitMetrics']);
  });

  it("runs a group plan member by member (load, reconcile), then ONE PublishGroup, then each member's metrics and cleanup", () => {
    expect(state('GroupMembers')).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.plan.members',
      MaxConcurrency: 1,
      ItemSelector: { 'plan.$': '$$.Map.Item.Value' },
      ResultPath: null,
      Next: 'PublishGroup',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'RecordFailure' }],
    });
    expect(state('GroupMembers').ItemProcessor).toMatchObject({ StartAt: 'MemberLoadChunks' });
    expect(state('MemberLoadChunks')).toMatchObject({
      ItemsPath: '$.plan.chunks',
      MaxConcurrencyPath: '$.plan.maxConcurrency',
      ItemSelector: { 'batch.$': '$.plan.batch', 'chunk.$': '$$.Map.Item.Value' },
      Next: 'MemberReconcile',
    });
    expect(state('MemberReconcile')).toMatchObject({ Parameters: { 'batch.$': '$.plan.batch' }, End: true });
    expect(state('PublishGroup')).toMatchObject({
      Parameters: { 'group.$': '$.plan.group.name', 'members.$': '$.plan.members' },
      ResultPath: '$.publish',
      Next: 'GroupCleanup',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'RecordFailure' }],
    });
    expect(state('GroupCleanup')).toMatchObject({
      ItemsPath: '$.publish.members',
      ItemSelector: {
        'batch.$': '$$.Map.Item.Value.batch',
        'publish.$': '$$.Map.Item.Value.publish',
        'executionStartedAt.$': '$$.Execution.StartTime',
        'executionId.$': '$$.Execution.Id',
      },
      Next: 'GroupPublished',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'RecordFailure' }],
    });
    expect(state('MemberEmitMetrics')).toMatchObject({ Parameters: { 'batch.$': '$.batch', 'publish.$': '$.publish' }, Next: 'MemberCleanup' });
    expect(state('MemberCleanup')).toMatchObject({ Parameters: { 'batch.$': '$.batch', 'executionId.$': '$.executionId' }, End: true });
    for (const [name, step] of [
      ['MemberLoadChunk', 'LoadChunk'],
      ['MemberReconcile', 'Reconcile'],
      ['MemberEmitMetrics', 'EmitMetrics'],
      ['MemberCleanup', 'Cleanup'],
    ] as const) {
      expect(taskFunctions[name], name).toBe(functionId(step));
    }
    expect(asl.States.GroupPublished).toEqual({ Type: 'Succeed' });
  });

  it('skips to NothingToPublish when the plan says the batch is already published, to PipelineBusy when a running execution holds the lease for this batch (or a rollback finds it held), and waits to plan again when it runs another', () => {
    expect(state('AlreadyPublished')).toEqual({
      Type: 'Choice',
      Choices: [
        { Variable: '$.plan.alreadyPublished', BooleanEquals: true, Next: 'NothingToPublish' },
        {
          And: [
            { Variable: '$.plan.busy', BooleanEquals: true },
            { Variable: '$.plan.skipped.wait', IsPresent: true },
            { Variable: '$.plan.skipped.wait', BooleanEquals: true },
          ],
          Next: 'LeaseHeld',
        },
        { Variable: '$.plan.busy', BooleanEquals: true, Next: 'PipelineBusy' },
        { Variable: '$.plan.rollback', IsPresent: true, Next: 'Rollback' },
        { Variable: '$.plan.group', IsPresent: true, Next: 'GroupMembers' },
        { Variable: '$.plan.windows', IsPresent: true, Next: 'LoadWindows' },
      ],
      Default: 'LoadChunks',
    });
    expect(asl.States.NothingToPublish).toEqual({ Type: 'Succeed' });
    expect(asl.States.PipelineBusy).toMatchObject({ Type: 'Succeed' });
    // Only who holds the lease rides on: a failure after the wait has no batch of this run's to record.
    expect(state('LeaseHeld')).toMatchObject({ Type: 'Pass', Parameters: { 'lease.$': '$.plan.skipped' }, Next: 'LeaseWait' });
    expect(state('LeaseWait')).toEqual({ Type: 'Wait', Seconds: LEASE_RECHECK_SECONDS, Next: 'Plan' });
    const plan = Object.values(template.findResources('AWS::Lambda::Function')).find(
      (f) => f.Properties.Environment?.Variables?.LEASE_WAIT_SECONDS !== undefined,
    );
    expect(plan?.Properties.Environment.Variables.LEASE_WAIT_SECONDS).toBe('1800');
  });

  it('runs a rollback plan through Rollback, then EmitMetrics and Cleanup as a publish, its result where Publish puts its own', () => {
    expect(state('Rollback')).toMatchObject({
      Parameters: { 'batch.$': '$.plan.batch', 'rollback.$': '$.plan.rollback', 'executionId.$': '$$.Execution.Id' },
      ResultPath: '$.publish',
      Next: 'EmitMetrics',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'RecordFailure' }],
    });
  });

  it('ends a superseded batch at Superseded, after Publish, without EmitMetrics or a page', () => {
    expect(state('Publish').Next).toBe('NewerDataLive');
    expect(state('NewerDataLive')).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.publish.superseded', BooleanEquals: true, Next: 'Superseded' }],
      Default: 'EmitMetrics',
    });
    expect(asl.States.Superseded).toMatchObject({ Type: 'Succeed' });
  });

  it('passes each task the payload its handler expects and stores its result where later states read it', () => {
    // The state starts empty whatever the input; the input comes from the context object, never from the state.
    expect(state('Input')).toEqual({ Type: 'Pass', Result: {}, Next: 'Plan' });
    expect(state('Plan')).toMatchObject({
      Parameters: { 'input.$': '$$.Execution.Input', 'startedAt.$': '$$.Execution.StartTime', 'executionId.$': '$$.Execution.Id', leaseSeconds: 12 * 3600 },
      ResultPath: '$.plan',
    });
    for (const name of ['Publish', 'Cleanup']) expect(state(name)).toMatchObject({ Parameters: { 'executionId.$': '$$.Execution.Id' } });
    for (const [name, resultPath] of [
      ['Reconcile', '$.reconcile'],
      ['Publish', '$.publish'],
      ['Cleanup', '$.cleanup'],
    ] as const) {
      expect(state(name)).toMatchObject({ Parameters: { 'batch.$': '$.plan.batch' }, ResultPath: resultPath });
    }
    expect(state('EmitMetrics')).toMatchObject({
      Parameters: {
        'batch.$': '$.plan.batch',
        'publish.$': '$.publish',
        'executionStartedAt.$': '$$.Execution.StartTime',
      },
      ResultPath: '$.metrics',
    });
    expect(state('RecordFailure')).toMatchObject({
      Parameters: { 'state.$': '$', 'input.$': '$$.Execution.Input', 'executionId.$': '$$.Execution.Id', 'executionStartedAt.$': '$$.Execution.StartTime' },
      ResultPath: '$.failure',
      Next: 'Notify',
    });
  });

  it('fans LoadChunk out over $.plan.chunks with the planned concurrency and discards the Map result', () => {
    const map = state('LoadChunks');
    expect(map).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.plan.chunks',
      MaxConcurrencyPath: '$.plan.maxConcurrency',
      ItemSelector: { 'batch.$': '$.plan.batch', 'chunk.$': '$$.Map.Item.Value' },
      ResultPath: null,
      Next: 'Reconcile',
    });
    expect(map.MaxConcurrency).toBeUndefined();
    expect(map.ItemProcessor).toMatchObject({ ProcessorConfig: { Mode: 'INLINE' }, StartAt: 'LoadChunk' });
  });

  it('invokes every step handler directly by function ARN (payloadResponseOnly), so the handler gets the raw state input', () => {
    for (const name of LAMBDA_STATE_NAMES) {
      expect(state(name).Type).toBe('Task');
      expect(state(name).Resource).toBe(localFunctionArn(functionId(name)));
      expect(taskFunctions[name]).toBe(functionId(name));
    }
    expect(Object.keys(taskFunctions).sort()).toEqual(
      [
        ...LAMBDA_STATE_NAMES,
        'MemberLoadChunk',
        'MemberReconcile',
        'MemberEmitMetrics',
        'MemberCleanup',
        'PlanWindow',
        'WindowLoadChunk',
        'CheckCleanup',
      ].sort(),
    );
    // A window's steps invoke Plan's and LoadChunk's functions.
    expect(taskFunctions.PlanWindow).toBe(functionId('Plan'));
    expect(taskFunctions.WindowLoadChunk).toBe(functionId('LoadChunk'));
  });

  it('runs a batch in windows as child executions of a Distributed Map, one window at a time, each recording and loading its chunks', () => {
    expect(state('LoadWindows')).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.plan.windows',
      MaxConcurrency: 1,
      ItemSelector: { 'batch.$': '$.plan.batch', 'window.$': '$$.Map.Item.Value', 'maxConcurrency.$': '$.plan.maxConcurrency' },
      ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' }, StartAt: 'PlanWindow' },
      ResultPath: null,
      Next: 'Reconcile',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'RecordFailure' }],
    });
    // No failure tolerated: the first failed window fails the Map.
    expect(state('LoadWindows').ToleratedFailurePercentage ?? 0).toBe(0);
    expect(state('LoadWindows').ToleratedFailureCount ?? 0).toBe(0);
    expect(state('PlanWindow')).toMatchObject({
      Parameters: { 'batch.$': '$.batch', 'window.$': '$.window' },
      ResultPath: '$.planned',
      Next: 'WindowLoadChunks',
    });
    expect(state('WindowLoadChunks')).toMatchObject({
      ItemsPath: '$.planned.chunks',
      MaxConcurrencyPath: '$.maxConcurrency',
      ItemSelector: { 'batch.$': '$.batch', 'chunk.$': '$$.Map.Item.Value' },
      ResultPath: null,
      Next: 'WindowLoaded',
    });
    // A child's output is {}: the Map's collected results stay small whatever the number of windows.
    expect(state('WindowLoaded')).toMatchObject({ Type: 'Pass', Result: {}, End: true });
  });

  it('retries only transient warehouse errors and Lambda service errors, with full jitter, on every Lambda task (no CDK default retrier)', () => {
    // Literal on purpose: the budget is a decision (a Serverless resume or a short
    // maintenance fits in 2 + 4 + ... + 64 + 120 + 120 s), not whatever the code computes.
    // EmitMetrics also retries a publication event EventBridge refused (the same event is sent again).
    const eventRetry = [{ ErrorEquals: ['PublicationEventError'], IntervalSeconds: 1, MaxAttempts: 5, BackoffRate: 2, JitterStrategy: 'FULL' }];
    for (const name of [...LAMBDA_STATE_NAMES, 'MemberEmitMetrics']) {
      expect(state(name).Retry, name).toEqual([
        { ErrorEquals: ['TransientWarehouseError'], IntervalSeconds: 2, MaxAttempts: 8, BackoffRate: 2, MaxDelaySeconds: 120, JitterStrategy: 'FULL' },
        {
          ErrorEquals: [
            'Lambda.ServiceException',
            'Lambda.AWSLambdaException',
            'Lambda.SdkClientException',
            'Lambda.ClientExecutionTimeoutException',
            'Lambda.TooManyRequestsException',
          ],
          IntervalSeconds: 1,
          MaxAttempts: 3,
          BackoffRate: 2,
          JitterStrategy: 'FULL',
        },
        ...(name.endsWith('EmitMetrics') ? eventRetry : []),
      ]);
    }
  });

  it('routes any error of Plan, LoadChunks, Reconcile, Publish, EmitMetrics, Cleanup and CheckCleanup to RecordFailure with the error at $.error', () => {
    for (const name of ['Plan', 'LoadChunks', 'Reconcile', 'Publish', 'EmitMetrics', 'Cleanup', 'CheckCleanup']) {
      expect(state(name).Catch, name).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'RecordFailure' }]);
    }
    // LoadChunk catches only its load still running: any other error fails the Map, which pages.
    expect(state('LoadChunk').Catch).toEqual([{ ErrorEquals: ['LoadStillRunningError'], ResultPath: '$.stillRunning', Next: 'WaitForLoad' }]);
  });

  it('loads a chunk in one state: LoadChunk returns the chunk index; a load outlasting the invocation is caught, waited for and looked at again', () => {
    for (const prefix of ['', 'Member', 'Window']) {
      expect(state(`${prefix}LoadChunk`), prefix).toMatchObject({ ResultPath: null, OutputPath: '$.chunk.index', End: true });
      expect(state(`${prefix}LoadChunk`).Catch, prefix).toEqual([
        { ErrorEquals: ['LoadStillRunningError'], ResultPath: '$.stillRunning', Next: `${prefix}WaitForLoad` },
      ]);
      expect(state(`${prefix}WaitForLoad`), prefix).toEqual({ Type: 'Wait', Seconds: 5, Next: `${prefix}LoadChunk` });
    }
    // Not retried: a Catch has no attempt budget, so a load of any length is waited for.
    expect(JSON.stringify(state('LoadChunk').Retry)).not.toContain('LoadStillRunningError');
  });

  it('pages with a fallback alert built by DescribeFailure when RecordFailure itself fails', () => {
    expect(state('RecordFailure').Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.recordFailureError', Next: 'DescribeFailure' }]);
    const fallback = state('DescribeFailure');
    expect(fallback).toEqual({
      Type: 'Pass',
      Parameters: {
        subject: 'atomic-publish: a run failed (details unavailable)',
        'message.$': expect.stringMatching(
          /^States\.Format\('atomic-publish: a run failed, [^']*', \$\.recordFailureError\.Error, States\.JsonToString\(\$\.error\), \$\$\.Execution\.Id\)$/,
        ),
      },
      ResultPath: '$.failure',
      Next: 'Notify',
    });
    const message = (fallback.Parameters as Record<string, string>)['message.$']!;
    // Plain ASCII, and it must not claim the live table is untouched (a failure after Publish leaves it published).
    expect(message).toMatch(/^[\x20-\x7e]+$/);
    expect(message).toContain('atomic_publish.batch_attempts');
    expect(message).not.toMatch(/unchanged|untouched/);
    expect(message.match(/\{\}/g)).toHaveLength(3);
  });

  it('pages the on-call topic with the recorded subject and message, then fails with AtomicPublishFailed', () => {
    expect(state('Notify')).toMatchObject({
      Type: 'Task',
      Resource: 'arn:aws:states:::sns:publish',
      Parameters: {
        TopicArn: `arn:aws:sns:local:000000000000:${topicId()}`,
        'Subject.$': '$.failure.subject',
        'Message.$': '$.failure.message',
      },
      ResultPath: null,
      Next: 'Failed',
    });
    expect(state('Failed')).toEqual({
      Type: 'Fail',
      Error: 'AtomicPublishFailed',
      Cause: 'See the on-call alert and the manifest (atomic_publish.batches) for details',
    });
  });

  it('is a Standard state machine with a 12 h timeout, X-Ray tracing and ALL-level logs including execution data', () => {
    expect(asl.TimeoutSeconds).toBe(12 * 3600);
    expect(asl.QueryLanguage ?? 'JSONPath').toBe('JSONPath');
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: {
        Level: 'ALL',
        IncludeExecutionData: true,
        Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [logicalId(stack.logGroup.node.defaultChild), 'Arn'] } } }],
      },
    });
  });
});

describe('step handlers', () => {
  it("records each function's handler module in the atomic-publish:entry metadata", () => {
    for (const name of LAMBDA_STATE_NAMES) {
      const resource = template.toJSON().Resources[functionId(name)];
      expect(resource.Metadata['atomic-publish:entry'], name).toBe(stepEntry(name));
    }
    expect(stateMachineDefinition(template.toJSON()).taskEntries.LoadChunk).toBe('functions/load-chunk/index.ts');
  });

  it('runs Node.js 22 on arm64 with 256 MB, the step timeout, and the warehouse and Powertools environment', () => {
    // The warehouse steps bound their waits by the invocation's remaining time; RecordFailure must be quick.
    const timeoutSeconds: Record<StepName, number> = {
      Plan: 900,
      LoadChunk: 900,
      Reconcile: 900,
      Publish: 900,
      Rollback: 900,
      PublishGroup: 900,
      EmitMetrics: 900,
      Cleanup: 900,
      RecordFailure: 120,
      CancelOrphans: 300,
    };
    for (const name of STEP_NAMES) {
      template.hasResource('AWS::Lambda::Function', {
        Metadata: Match.objectLike({ 'atomic-publish:entry': stepEntry(name) }),
        Properties: Match.objectLike({
          Handler: 'index.handler',
          Runtime: 'nodejs22.x',
          Architectures: ['arm64'],
          MemorySize: 256,
          Timeout: timeoutSeconds[name],
          Environment: {
            Variables: {
              WAREHOUSE_DATABASE: 'dev',
              WAREHOUSE_WORKGROUP: 'analytics',
              POWERTOOLS_SERVICE_NAME: 'atomic-publish',
              POWERTOOLS_METRICS_NAMESPACE: 'AtomicPublish',
              CODE_VERSION,
              NODE_OPTIONS: '--enable-source-maps',
              // The warehouse's circuit breaker, on by default (domain/neighbour/neighbour.ts).
              BREAKER_FAILURES: '5',
              BREAKER_COOL_DOWN_SECONDS: '900',
            },
          },
        }),
      });
    }
  });
});

describe('execution ids for the logs', () => {
  it("hands every step the execution's id: in its payload, or in the item a chunk load gets from its Map (a window's, the parent's)", () => {
    const payloads: Record<string, string | undefined> = {};
    for (const name of [
      'Plan',
      'Reconcile',
      'CheckCleanup',
      'Publish',
      'Rollback',
      'EmitMetrics',
      'Cleanup',
      'RecordFailure',
      'PublishGroup',
      'MemberReconcile',
    ]) {
      payloads[name] = state(name).Parameters?.['executionId.$'] as string | undefined;
    }
    expect(payloads).toEqual(Object.fromEntries(Object.keys(payloads).map((name) => [name, '$$.Execution.Id'])));
    // Inside GroupCleanup and a window: the Map's item carries it.
    expect(state('MemberEmitMetrics').Parameters?.['executionId.$']).toBe('$.executionId');
    expect(state('MemberCleanup').Parameters?.['executionId.$']).toBe('$.executionId');
    expect(state('PlanWindow').Parameters?.['executionId.$']).toBe('$.executionId');
    const itemSelector = (map: string) => (state(map).ItemSelector as Record<string, unknown>)['executionId.$'];
    expect(['LoadChunks', 'MemberLoadChunks', 'LoadWindows', 'GroupCleanup'].map(itemSelector)).toEqual(Array(4).fill('$$.Execution.Id'));
    expect(itemSelector('WindowLoadChunks')).toBe('$.executionId');
    for (const load of ['LoadChunk', 'MemberLoadChunk', 'WindowLoadChunk']) expect(state(load).Parameters, load).toBeUndefined();
  });
});

describe('tracing', () => {
  it('traces every function actively in X-Ray (the step handlers, StartRun and the freshness monitor)', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(STEP_NAMES.length + 2);
    for (const fn of functions) expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
  });

  it("lets each function's role write traces, and nothing more of X-Ray", () => {
    const roles = [stack.handlerRole, stack.startRun!.role!, stack.freshnessMonitor.role];
    for (const role of roles) {
      const roleId = logicalId(role.node.defaultChild);
      const statements = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
        (p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
      );
      const xray = statements.filter((st) => [st.Action].flat().some((a) => a.startsWith('xray:')));
      expect(xray, roleId).toEqual([{ Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Effect: 'Allow', Resource: '*' }]);
    }
  });
});

describe('permissions', () => {
  const policyOf = (name: StepName) => {
    const roleId = logicalId(stack.functions[name].role!.node.defaultChild);
    const policies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } });
    return Object.values(policies).flatMap((p) => p.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
  };

  it('runs every step handler under one role, so every step is the same database user; StartRun and the freshness monitor under roles of their own', () => {
    const roleId = logicalId(stack.handlerRole.node.defaultChild);
    const startRunRoleId = logicalId(stack.startRun!.role!.node.defaultChild);
    const monitorRoleId = logicalId(stack.freshnessMonitor.role.node.defaultChild);
    const ownRoles: Record<string, string> = {
      [logicalId(stack.startRun!.node.defaultChild)]: startRunRoleId,
      [logicalId(stack.freshnessMonitor.function.node.defaultChild)]: monitorRoleId,
    };
    const functions = Object.entries(template.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(STEP_NAMES.length + 2);
    for (const [id, fn] of functions) {
      expect(fn.Properties.Role).toEqual({ 'Fn::GetAtt': [ownRoles[id] ?? roleId, 'Arn'] });
    }
    for (const name of STEP_NAMES) expect(stack.functions[name].role).toBe(stack.handlerRole);
    // Only these two roles are assumed by Lambda (no per-function ServiceRole left over).
    const lambdaRoles = Object.keys(
      template.findResources('AWS::IAM::Role', {
        Properties: { AssumeRolePolicyDocument: { Statement: [Match.objectLike({ Principal: { Service: 'lambda.amazonaws.com' } })] } },
      }),
    );
    expect(lambdaRoles.sort()).toEqual([roleId, startRunRoleId, monitorRoleId].sort());
  });

  it('lets StartRun start executions of this state machine, write its own log and its traces, nothing else', () => {
    const roleId = logicalId(stack.startRun!.role!.node.defaultChild);
    const statements = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } })).flatMap(
      (p) => p.Properties.PolicyDocument.Statement as Record<string, unknown>[],
    );
    expect(statements).toEqual([
      { Effect: 'Allow', Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Resource: '*' },
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^SchedulesStartRunFunctionLogs/), 'Arn'] },
      },
      { Effect: 'Allow', Action: 'states:StartExecution', Resource: { Ref: logicalId(stack.stateMachine.node.defaultChild) } },
      // Its failed asynchronous invocations go to the missed-starts queue (the on-failure destination).
      {
        Effect: 'Allow',
        Action: 'sqs:SendMessage',
        Resource: { 'Fn::GetAtt': [logicalId(stack.node.findChild('Schedules').node.findChild('MissedStarts').node.defaultChild), 'Arn'] },
      },
    ]);
    expect(template.toJSON().Resources[roleId].Properties.ManagedPolicyArns).toBeUndefined();
  });

  it("attaches the Data API permissions once to the handler role, and once to the freshness monitor's", () => {
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((p) =>
      (p.Properties.PolicyDocument.Statement as { Action: unknown }[]).map((statement) => ({ statement, roles: p.Properties.Roles })),
    );
    const withAction = (action: string) => statements.filter(({ statement }) => JSON.stringify(statement.Action).includes(`"${action}"`));
    const roleRefs = [stack.handlerRole, stack.freshnessMonitor.role].map((role) => [{ Ref: logicalId(role.node.defaultChild) }]);
    for (const action of ['redshift-data:ExecuteStatement', 'redshift-data:DescribeStatement', 'redshift-serverless:GetCredentials']) {
      expect(
        withAction(action).map((s) => s.roles),
        action,
      ).toEqual(roleRefs);
    }
  });

  it("lets the role write only to the step handlers' own log groups (seven steps and CancelOrphans), without a managed policy", () => {
    const roleId = logicalId(stack.handlerRole.node.defaultChild);
    expect(template.toJSON().Resources[roleId].Properties.ManagedPolicyArns).toBeUndefined();
    const logStatements = policyOf('Plan').filter((s) => JSON.stringify(s.Action).includes('logs:'));
    expect(logStatements).toHaveLength(STEP_NAMES.length);
    const logGroupIds = new Set(Object.keys(template.findResources('AWS::Logs::LogGroup')));
    for (const statement of logStatements) {
      expect(statement.Action).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
      const [groupId, attribute] = (statement.Resource as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
      expect(attribute).toBe('Arn');
      expect(logGroupIds.has(groupId)).toBe(true);
    }
    const loggingGroups = STEP_NAMES.map((name) => {
      const fn = template.toJSON().Resources[functionId(name)];
      return (fn.Properties.LoggingConfig.LogGroup as { Ref: string }).Ref;
    });
    expect(logStatements.map((s) => (s.Resource as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]).sort()).toEqual(loggingGroups.sort());
  });

  it('lets the handlers describe, read and cancel only the statements their role submitted, and list their own', () => {
    for (const name of STEP_NAMES) {
      expect(policyOf(name)).toContainEqual({
        Effect: 'Allow',
        Action: ['redshift-data:DescribeStatement', 'redshift-data:GetStatementResult', 'redshift-data:CancelStatement'],
        Resource: '*',
        // Every session of the role (`<role id>:<function>`): RecordFailure cancels what LoadChunk submitted.
        Condition: {
          StringLike: {
            'redshift-data:statement-owner-iam-userid': {
              'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.handlerRole.node.defaultChild), 'RoleId'] }, ':*']],
            },
          },
        },
      });
      expect(policyOf(name)).toContainEqual({ Effect: 'Allow', Action: 'redshift-data:ListStatements', Resource: '*' });
    }
  });

  it("without a workgroup ARN, scopes ExecuteStatement and GetCredentials to the account's workgroups, never to *", () => {
    const workgroups = {
      'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':redshift-serverless:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':workgroup/*']],
    };
    const statements = policyOf('Publish');
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: ['redshift-data:ExecuteStatement', 'redshift-data:BatchExecuteStatement'],
      Resource: workgroups,
    });
    expect(statements).toContainEqual({ Effect: 'Allow', Action: 'redshift-serverless:GetCredentials', Resource: workgroups });
    // On "*", only statements of this role: by the owner condition, or ListStatements, which lists only the caller's own;
    // besides them, the X-Ray writes of active tracing (no resource type).
    const onAll = statements.filter(
      (s) => s.Resource === '*' && JSON.stringify(s.Action) !== JSON.stringify(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']),
    );
    expect(onAll.length).toBeGreaterThan(0);
    expect(onAll.every((s) => s.Condition !== undefined || s.Action === 'redshift-data:ListStatements')).toBe(true);
  });

  it('lets the state machine invoke exactly the seven step handlers by their unqualified ARNs and publish to the on-call topic', () => {
    const roleId = logicalId(stack.stateMachine.role.node.defaultChild);
    const policies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } });
    const statements = Object.values(policies).flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[]);
    const invokes = statements.filter((s) => s.Action === 'lambda:InvokeFunction');
    // One ARN per function, no `<arn>:*` (versions and aliases, which the Task states never name).
    for (const s of invokes) expect(s.Resource).toEqual({ 'Fn::GetAtt': [expect.any(String), 'Arn'] });
    const invoked = invokes.map((s) => (s.Resource as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]).sort();
    expect(invoked).toEqual(LAMBDA_STATE_NAMES.map(functionId).sort());
    expect(statements).toContainEqual({ Effect: 'Allow', Action: 'sns:Publish', Resource: { Ref: topicId() } });
  });
});

describe('an aborted or timed-out execution', () => {
  it("has an EventBridge rule send this state machine's ABORTED and TIMED_OUT status changes to CancelOrphans, retried", () => {
    const rules = template.findResources('AWS::Events::Rule');
    expect(Object.keys(rules)).toEqual([logicalId(stack.stoppedExecutionRule.node.defaultChild)]);
    const [rule] = Object.values(rules);
    expect(rule!.Properties.EventPattern).toEqual({
      source: ['aws.states'],
      'detail-type': ['Step Functions Execution Status Change'],
      detail: { status: ['ABORTED', 'TIMED_OUT'], stateMachineArn: [{ Ref: logicalId(stack.stateMachine.node.defaultChild) }] },
    });
    expect(rule!.Properties.State).toBe('ENABLED');
    expect(rule!.Properties.Targets).toEqual([
      {
        Arn: { 'Fn::GetAtt': [functionId('CancelOrphans'), 'Arn'] },
        Id: expect.any(String),
        RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 6 * 3600 },
      },
    ]);
    expect(template.toJSON().Resources[functionId('CancelOrphans')].Metadata['atomic-publish:entry']).toBe(stepEntry('CancelOrphans'));
  });

  it('lets only that rule invoke CancelOrphans, and the state machine never does', () => {
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [functionId('CancelOrphans'), 'Arn'] },
      Principal: 'events.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [logicalId(stack.stoppedExecutionRule.node.defaultChild), 'Arn'] },
    });
    expect(Object.keys(taskFunctions)).not.toContain('CancelOrphans');
    expect(Object.values(taskFunctions)).not.toContain(functionId('CancelOrphans'));
  });
});

describe('deploying again', () => {
  it('names the handler role after the stack, so the database user IAMR:<role> outlives a replacement of the role', () => {
    const roleId = logicalId(stack.handlerRole.node.defaultChild);
    expect(template.toJSON().Resources[roleId].Properties.RoleName).toBe('atomicpublish-handlers');
    expect(stack.handlerRoleName).toBe('atomicpublish-handlers');
    template.hasOutput('DatabaseUser', { Value: 'IAMR:atomicpublish-handlers' });
  });

  it("ends the retained execution log group's name with the stack's own id, so a deploy after cdk destroy does not collide with it", () => {
    const group = template.toJSON().Resources[logicalId(stack.logGroup.node.defaultChild)];
    expect(group.DeletionPolicy).toBe('Retain');
    expect(group.Properties.LogGroupName).toEqual({
      'Fn::Join': ['', ['/aws/vendedlogs/states/AtomicPublish-Workflow-', { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] }]],
    });
    // No log group of the stack has a fixed name.
    for (const [id, resource] of Object.entries(template.findResources('AWS::Logs::LogGroup'))) {
      const name = resource.Properties.LogGroupName;
      expect(name === undefined || JSON.stringify(name).includes('AWS::StackId'), id).toBe(true);
    }
  });
});

describe('on-call topic and alarms', () => {
  it("denies publishing to the topic without TLS and allows this account's CloudWatch alarms", () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId() }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Principal: '*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({
            Effect: 'Allow',
            Action: 'sns:Publish',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
          }),
        ]),
      },
    });
  });

  it('subscribes the alarmEmail context address to the topic', () => {
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com', TopicArn: { Ref: topicId() } });
  });

  it('pages when one execution fails within 5 minutes, and stays quiet without executions', () => {
    expect(stack.alarms.ExecutionsFailed).toBeDefined();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/States',
      MetricName: 'ExecutionsFailed',
      Dimensions: [{ Name: 'StateMachineArn', Value: { Ref: logicalId(stack.stateMachine.node.defaultChild) } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: topicId() }],
    });
  });

  it('tells on-call where to look after a failed or timed-out execution, without claiming the live table is unchanged', () => {
    const descriptions = ['ExecutionsFailed', 'ExecutionsTimedOut'].map((metric) => {
      const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: metric } }));
      expect(alarms, metric).toHaveLength(1);
      return alarms[0]!.Properties.AlarmDescription as string;
    });
    for (const description of descriptions) {
      expect(description).toContain('atomic_publish.batch_attempts');
      expect(description).not.toMatch(/unchanged|untouched/);
    }
    expect(descriptions[0]).toContain('failure alert');
    expect(descriptions[1]).toContain('no failure alert was sent');
  });

  it('pages per pipeline when its live data was published longer ago than its SLA, or the monitor stops measuring it, and says so when it clears', () => {
    expect(pipelines.length).toBeGreaterThan(0);
    for (const pipeline of pipelines) {
      expect(stack.alarms[`Freshness:${pipeline.name}`]).toBeDefined();
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AtomicPublish',
        MetricName: 'PublishAgeSeconds',
        Dimensions: [{ Name: 'Pipeline', Value: pipeline.name }],
        Statistic: 'Maximum',
        // The monitor's rate (5 minutes by default): one datapoint a period.
        Period: 300,
        Threshold: pipeline.freshness.slaMinutes * 60,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
        TreatMissingData: 'breaching',
        AlarmActions: [{ Ref: topicId() }],
        OKActions: [{ Ref: topicId() }],
      });
      const [alarm] = Object.values(
        template.findResources('AWS::CloudWatch::Alarm', { Properties: { Dimensions: [{ Name: 'Pipeline', Value: pipeline.name }] } }),
      );
      const description = alarm!.Properties.AlarmDescription as string;
      expect(description).toContain(`pipeline ${pipeline.name}`);
      expect(description).toContain(`${pipeline.freshness.slaMinutes} minutes`);
      expect(description).toContain('freshness monitor stopped');
      expect(description).toContain('Runbook: docs/runbook.md, "Freshness alarm" (docs/runbook.md#freshness-alarm).');
    }
    // The publish count no longer pages: the age covers "nothing published" and measures how stale.
    expect(template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'Published' } })).toEqual({});
  });

  it('pages on the data lag only for a pipeline that sets freshness.maxDataLagMinutes, leaving a silent monitor to the freshness alarm', () => {
    expect(template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'LiveDataLagSeconds' } })).toEqual({});
    const lagging = definePipeline({ ...salesOrderLines, freshness: { slaMinutes: 1440, maxDataLagMinutes: 2880 } });
    const other = new AtomicPublishStack(new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } }), 'Lag', {
      warehouse: { database: 'dev', workgroupName: 'wg' },
      pipelines: [lagging],
    });
    const t = Template.fromStack(other);
    expect(other.alarms['DataLag:sales_order_lines']).toBeDefined();
    t.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AtomicPublish',
      MetricName: 'LiveDataLagSeconds',
      Dimensions: [{ Name: 'Pipeline', Value: 'sales_order_lines' }],
      Statistic: 'Maximum',
      Period: 300,
      Threshold: 2880 * 60,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'missing',
      AlarmActions: [{ Ref: other.getLogicalId(other.topic.node.defaultChild as CfnElement) }],
      OKActions: [{ Ref: other.getLogicalId(other.topic.node.defaultChild as CfnElement) }],
      AlarmDescription: Match.stringLikeRegexp(
        'pipeline sales_order_lines publishes old data: the newest ordered_at in analytics.sales_order_lines is more than 2880 minutes old.*Runbook: docs/runbook.md, "Data lag alarm"',
      ),
    });
  });

  it('runs the freshness monitor every 5 minutes by default, under a role of its own with a fixed name, without retries', () => {
    const monitorFn = logicalId(stack.freshnessMonitor.function.node.defaultChild);
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(5 minutes)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [monitorFn, 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 300 } }),
    });
    template.hasResourceProperties('AWS::IAM::Role', { RoleName: 'atomicpublish-handlers-monitor' });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Role: { 'Fn::GetAtt': [logicalId(stack.freshnessMonitor.role.node.defaultChild), 'Arn'] },
      Environment: { Variables: Match.objectLike({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_WORKGROUP: 'analytics' }) },
    });
    template.hasOutput('MonitorDatabaseUser', { Value: 'IAMR:atomicpublish-handlers-monitor' });
  });

  it('takes the monitor rate from context, and the alarms follow it; refuses a rate that is no whole number of minutes', () => {
    const { stack: other } = buildApp({ bundling: false, outdir, context: { freshnessMonitorRateMinutes: '2' } });
    const t = Template.fromStack(other);
    t.hasResourceProperties('AWS::Scheduler::Schedule', { ScheduleExpression: 'rate(2 minutes)' });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'PublishAgeSeconds', Period: 120 });
    expect(() => buildApp({ bundling: false, outdir, context: { freshnessMonitorRateMinutes: '1.5' } })).toThrow(
      /freshnessMonitorRateMinutes must be a whole number of minutes/,
    );
    expect(() => buildApp({ bundling: false, outdir, context: { freshnessMonitorRateMinutes: '90' } })).toThrow(
      /freshnessMonitorRate must be a whole number of minutes from 1 to 60/,
    );
  });
});

describe('the live watch', () => {
  it('runs the same function every hour by default on a schedule of its own, with the live watch input, without retries; the function may take 15 minutes to scan', () => {
    const monitorFn = logicalId(stack.freshnessMonitor.function.node.defaultChild);
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 hour)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [monitorFn, 'Arn'] },
        Input: JSON.stringify(LIVE_WATCH_EVENT),
        RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 3600 },
      }),
    });
    expect(template.toJSON().Resources[monitorFn].Properties.Timeout).toBe(900);
  });

  it('takes its rate from context, and the drift alarms follow it; refuses a rate over a day', () => {
    const { stack: other } = buildApp({ bundling: false, outdir, context: { liveWatchRateMinutes: '30' } });
    const t = Template.fromStack(other);
    t.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(30 minutes)',
      Target: Match.objectLike({ Input: JSON.stringify(LIVE_WATCH_EVENT) }),
    });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'LiveDrift', Period: 1800 });
    t.hasResourceProperties('AWS::Scheduler::Schedule', { ScheduleExpression: 'rate(5 minutes)' });
    expect(() => buildApp({ bundling: false, outdir, context: { liveWatchRateMinutes: '1441' } })).toThrow(
      /liveWatchRate must be a whole number of minutes from 1 to 1440/,
    );
  });
});

describe('schedules', () => {
  it('invokes StartRun for each scheduled pipeline at its cron in its time zone with the pipeline and the scheduled time, retried, no flexible window', () => {
    const scheduled = pipelines.filter((p) => p.schedule);
    expect(scheduled.length).toBeGreaterThan(0);
    const startRunArn = { 'Fn::GetAtt': [logicalId(stack.startRun!.node.defaultChild), 'Arn'] };
    expect(Object.keys(template.findResources('AWS::Scheduler::Schedule', { Properties: { Target: { Arn: startRunArn } } }))).toHaveLength(scheduled.length);
    for (const pipeline of scheduled) {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: pipeline.schedule!.expression,
        ScheduleExpressionTimezone: pipeline.schedule!.timezone,
        FlexibleTimeWindow: { Mode: 'OFF' },
        State: 'ENABLED',
        Target: Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(stack.startRun!.node.defaultChild), 'Arn'] },
          Input: JSON.stringify({ pipeline: pipeline.name, scheduledTime: '<aws.scheduler.scheduled-time>' }),
          RetryPolicy: { MaximumRetryAttempts: 10, MaximumEventAgeInSeconds: 3600 },
        }),
      });
    }
    // The Scheduler invokes it asynchronously: Lambda retries a failed start twice, within the hour.
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(stack.startRun!.node.defaultChild) },
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 3600,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Timeout: 60,
      Environment: { Variables: Match.objectLike({ STATE_MACHINE_ARN: { Ref: logicalId(stack.stateMachine.node.defaultChild) } }) },
    });
    expect(pipelines.find((p) => p.name === 'sales_order_lines')?.schedule?.timezone).toBe('Europe/Berlin');
  });

  it("sends the starts that did not happen to one encrypted, TLS-only queue: the schedules' dead letters and StartRun's failed invocations", () => {
    const queue = stack.node.findChild('Schedules').node.findChild('MissedStarts').node.defaultChild;
    const queueArn = { 'Fn::GetAtt': [logicalId(queue), 'Arn'] };
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: logicalId(queue) }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } }, Principal: { AWS: '*' } }),
        ]),
      },
    });
    // The pipelines' schedules (the freshness monitor's goes unretried: its own alarm notices a silence).
    const startRunArn = { 'Fn::GetAtt': [logicalId(stack.startRun!.node.defaultChild), 'Arn'] };
    const schedules = Object.values(template.findResources('AWS::Scheduler::Schedule', { Properties: { Target: { Arn: startRunArn } } }));
    expect(schedules).toHaveLength(pipelines.filter((p) => p.schedule).length);
    for (const schedule of schedules) expect(schedule.Properties.Target.DeadLetterConfig).toEqual({ Arn: queueArn });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(stack.startRun!.node.defaultChild) },
      DestinationConfig: { OnFailure: { Destination: queueArn } },
    });
  });

  it('pages the on-call topic as soon as the missed-starts queue holds a message, saying what it means and where the runbook is', () => {
    const queue = stack.node.findChild('Schedules').node.findChild('MissedStarts').node.defaultChild;
    const alarm = stack.alarms.MissedScheduledStarts!;
    const properties = template.toJSON().Resources[logicalId(alarm.node.defaultChild)].Properties;
    expect(properties).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue), 'QueueName'] } }],
      Statistic: 'Maximum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: logicalId(stack.topic.node.defaultChild) }],
      OKActions: [{ Ref: logicalId(stack.topic.node.defaultChild) }],
    });
    expect(properties.AlarmDescription).toMatch(/scheduled run was not started/);
    expect(properties.AlarmDescription).toContain('Runbook: docs/runbook.md, "Missed scheduled start alarm" (docs/runbook.md#missed-scheduled-start-alarm).');
  });
});

describe('publication events', () => {
  it('gives EmitMetrics and the freshness monitor the bus, and lets their roles put events only on the default bus as source atomic-publish', () => {
    const emitMetrics = template.toJSON().Resources[logicalId(stack.functions.EmitMetrics.node.defaultChild)].Properties;
    expect(emitMetrics.Environment.Variables.PUBLICATION_EVENT_BUS).toBe('default');
    const monitor = template.toJSON().Resources[logicalId(stack.freshnessMonitor.function.node.defaultChild)].Properties;
    expect(monitor.Environment.Variables.PUBLICATION_EVENT_BUS).toBe('default');
    for (const step of ['Plan', 'Publish', 'Rollback'] as const) {
      const env = template.toJSON().Resources[logicalId(stack.functions[step].node.defaultChild)].Properties.Environment.Variables;
      expect(env.PUBLICATION_EVENT_BUS, step).toBeUndefined();
    }
    const puts = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => (p.Properties.PolicyDocument.Statement as { Action: unknown }[]).map((statement) => ({ statement, roles: p.Properties.Roles })))
      .filter(({ statement }) => JSON.stringify(statement.Action).includes('events:PutEvents'));
    const statement = {
      Sid: 'PutPublicationEvents',
      Effect: 'Allow',
      Action: 'events:PutEvents',
      Resource: {
        'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':events:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':event-bus/default']],
      },
      Condition: { StringEquals: { 'events:source': 'atomic-publish' } },
    };
    expect(puts).toEqual([
      { roles: [{ Ref: logicalId(stack.handlerRole.node.defaultChild) }], statement },
      { roles: [{ Ref: logicalId(stack.freshnessMonitor.role.node.defaultChild) }], statement },
    ]);
  });
});
