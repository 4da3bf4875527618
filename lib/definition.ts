import { ENTRY_METADATA_KEY } from './workflow-steps.ts';

/**
 * Reads the state machine definition (ASL) back out of a synthesized
 * CloudFormation template, so tests and the local runner execute exactly
 * what would be deployed. Pure: takes the template JSON, touches nothing else.
 */

/** Placeholder region and account the resolved ARNs use. */
export const LOCAL_REGION = 'local';
export const LOCAL_ACCOUNT = '000000000000';
export const LOCAL_PARTITION = 'aws';

export interface CfnTemplate {
  readonly Resources?: Record<string, CfnResource>;
}

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly Metadata?: Record<string, unknown>;
}

/** The parts of the Amazon States Language this project reads; other fields pass through. */
export interface AslState {
  readonly Type: string;
  readonly Resource?: string;
  readonly Parameters?: Record<string, unknown>;
  readonly Next?: string;
  readonly End?: boolean;
  readonly ItemProcessor?: AslDefinition;
  readonly Iterator?: AslDefinition;
  readonly Branches?: readonly AslDefinition[];
  readonly [field: string]: unknown;
}

export interface AslDefinition {
  readonly StartAt: string;
  readonly States: Record<string, AslState>;
  readonly [field: string]: unknown;
}

export interface StateMachineDefinition {
  /** The ASL with every CloudFormation token replaced by a readable placeholder ARN. */
  readonly definition: AslDefinition;
  /** Logical id of the AWS::StepFunctions::StateMachine resource. */
  readonly stateMachineLogicalId: string;
  /** Task state name -> logical id of the Lambda function it invokes (nested Map/Parallel states included). */
  readonly taskFunctions: Record<string, string>;
  /** Task state name -> handler module (`atomic-publish:entry` metadata), for tasks whose function has it. */
  readonly taskEntries: Record<string, string>;
}

/** The placeholder ARN a Lambda function's `Fn::GetAtt [id, Arn]` resolves to. */
export function localFunctionArn(logicalId: string): string {
  return `arn:${LOCAL_PARTITION}:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${logicalId}`;
}

const PSEUDO_PARAMETERS: Record<string, string> = {
  'AWS::Partition': LOCAL_PARTITION,
  'AWS::Region': LOCAL_REGION,
  'AWS::AccountId': LOCAL_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::NoValue': '',
};

/** What `Ref` returns for resource types whose Ref is an ARN; other resources resolve to their logical id. */
const REF_ARN: Record<string, (id: string) => string> = {
  'AWS::SNS::Topic': (id) => `arn:${LOCAL_PARTITION}:sns:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${id}`,
  'AWS::StepFunctions::StateMachine': (id) => `arn:${LOCAL_PARTITION}:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${id}`,
};

const GETATT_ARN: Record<string, (id: string) => string> = {
  'AWS::Lambda::Function': localFunctionArn,
  'AWS::SNS::Topic': REF_ARN['AWS::SNS::Topic']!,
};

/** A template value as it resolves on this machine: Ref, Fn::GetAtt and Fn::Join of the stack's resources and pseudo parameters. */
export function resolveToken(part: unknown, resources: Record<string, CfnResource>): string {
  if (typeof part === 'string') return part;
  if (typeof part !== 'object' || part === null) throw new Error(`unexpected token in DefinitionString: ${JSON.stringify(part)}`);
  const token = part as Record<string, unknown>;
  if (typeof token.Ref === 'string') {
    const pseudo = PSEUDO_PARAMETERS[token.Ref];
    if (pseudo !== undefined) return pseudo;
    const resource = resources[token.Ref];
    if (!resource) throw new Error(`DefinitionString refers to unknown resource ${token.Ref}`);
    return REF_ARN[resource.Type]?.(token.Ref) ?? token.Ref;
  }
  if (Array.isArray(token['Fn::GetAtt'])) {
    const [id, attribute] = token['Fn::GetAtt'] as [string, string];
    const resource = resources[id];
    if (!resource) throw new Error(`DefinitionString refers to unknown resource ${id}`);
    const arn = GETATT_ARN[resource.Type];
    if (attribute === 'Arn' && arn) return arn(id);
    return `${id}.${attribute}`;
  }
  if (Array.isArray(token['Fn::Join'])) {
    const [separator, parts] = token['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveToken(p, resources)).join(separator);
  }
  throw new Error(`unsupported intrinsic in DefinitionString: ${Object.keys(token).join(', ')}`);
}

function collectTasks(definition: AslDefinition, visit: (name: string, state: AslState) => void): void {
  for (const [name, state] of Object.entries(definition.States)) {
    visit(name, state);
    if (state.ItemProcessor) collectTasks(state.ItemProcessor, visit);
    if (state.Iterator) collectTasks(state.Iterator, visit);
    for (const branch of state.Branches ?? []) collectTasks(branch, visit);
  }
}

/**
 * Extracts the ASL of the template's state machine.
 * @param stateMachineLogicalId which one, when the template holds several
 */
export function stateMachineDefinition(template: CfnTemplate, stateMachineLogicalId?: string): StateMachineDefinition {
  const resources = template.Resources ?? {};
  const machines = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::StepFunctions::StateMachine');
  const match = stateMachineLogicalId ? machines.filter(([id]) => id === stateMachineLogicalId) : machines;
  if (match.length !== 1) {
    throw new Error(
      stateMachineLogicalId
        ? `no AWS::StepFunctions::StateMachine ${stateMachineLogicalId} in the template`
        : `expected one AWS::StepFunctions::StateMachine in the template, found ${machines.length}: pass its logical id`,
    );
  }
  const [logicalId, machine] = match[0]!;
  const raw = machine.Properties?.DefinitionString;
  if (raw === undefined) throw new Error(`${logicalId} has no DefinitionString (DefinitionS3Location is not supported)`);
  const definition = JSON.parse(resolveToken(raw, resources)) as AslDefinition;

  const functionByArn = new Map(
    Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::Function')
      .map(([id]) => [localFunctionArn(id), id]),
  );
  const taskFunctions: Record<string, string> = {};
  const taskEntries: Record<string, string> = {};
  collectTasks(definition, (name, state) => {
    if (state.Type !== 'Task') return;
    // payloadResponseOnly: Resource is the function; the lambda:invoke integration names it in Parameters.
    const target = state.Resource?.endsWith(':states:::lambda:invoke') ? (state.Parameters?.FunctionName as string | undefined) : state.Resource;
    const functionId = target === undefined ? undefined : functionByArn.get(target);
    if (functionId === undefined) return;
    taskFunctions[name] = functionId;
    const entry = resources[functionId]?.Metadata?.[ENTRY_METADATA_KEY];
    if (typeof entry === 'string') taskEntries[name] = entry;
  });
  return { definition, stateMachineLogicalId: logicalId, taskFunctions, taskEntries };
}

/** A Lambda function an EventBridge rule runs on this state machine's execution status changes. */
export interface StatusChangeTarget {
  /** Logical id of the AWS::Events::Rule. */
  readonly ruleLogicalId: string;
  /** The rule's `detail` pattern, with CloudFormation tokens resolved (e.g. `{ status: ['ABORTED'], stateMachineArn: [...] }`). */
  readonly detailPattern: Record<string, readonly string[]>;
  /** Logical id of the target function. */
  readonly functionLogicalId: string;
  /** The function's handler module (`atomic-publish:entry` metadata). */
  readonly entry: string;
}

/**
 * The Lambda targets of the template's rules on Step Functions execution
 * status changes (`source` aws.states, `detail-type` given), so the local
 * runner sends its executions' status changes where EventBridge would.
 */
export function statusChangeTargets(template: CfnTemplate, detailType: string): StatusChangeTarget[] {
  const resources = template.Resources ?? {};
  const targets: StatusChangeTarget[] = [];
  for (const [ruleId, rule] of Object.entries(resources)) {
    if (rule.Type !== 'AWS::Events::Rule') continue;
    const pattern = rule.Properties?.EventPattern as { source?: string[]; 'detail-type'?: string[]; detail?: Record<string, unknown[]> } | undefined;
    if (!pattern?.['detail-type']?.includes(detailType) || !pattern.source?.includes('aws.states')) continue;
    const detailPattern = Object.fromEntries(
      Object.entries(pattern.detail ?? {}).map(([key, values]) => [key, values.map((value) => resolveToken(value, resources))]),
    );
    for (const target of (rule.Properties?.Targets ?? []) as { Arn?: unknown }[]) {
      const getAtt = (target.Arn as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'];
      const functionLogicalId = getAtt?.[0];
      if (!functionLogicalId || resources[functionLogicalId]?.Type !== 'AWS::Lambda::Function') continue;
      const entry = resources[functionLogicalId]?.Metadata?.[ENTRY_METADATA_KEY];
      if (typeof entry !== 'string') throw new Error(`function ${functionLogicalId} of rule ${ruleId} has no ${ENTRY_METADATA_KEY} metadata`);
      targets.push({ ruleLogicalId: ruleId, detailPattern, functionLogicalId, entry });
    }
  }
  return targets;
}

/** An EventBridge Scheduler schedule whose target is a Lambda function of the template. */
export interface ScheduleTarget {
  /** Logical id of the AWS::Scheduler::Schedule. */
  readonly scheduleLogicalId: string;
  readonly expression: string;
  readonly timezone?: string;
  /** The target's Input as synthesized, context attributes (`<aws.scheduler.scheduled-time>`) unreplaced. */
  readonly input: string;
  /** Logical id of the target function. */
  readonly functionLogicalId: string;
  /** The function's handler module (`atomic-publish:entry` metadata). */
  readonly entry: string;
  /** The function's environment, CloudFormation tokens resolved as the state machine's are. */
  readonly environment: Record<string, string>;
}

/** The template's schedules that invoke its Lambda functions, so a local run can fire them as the Scheduler would. */
export function scheduleTargets(template: CfnTemplate): ScheduleTarget[] {
  const resources = template.Resources ?? {};
  const targets: ScheduleTarget[] = [];
  for (const [scheduleId, schedule] of Object.entries(resources)) {
    if (schedule.Type !== 'AWS::Scheduler::Schedule') continue;
    const properties = schedule.Properties ?? {};
    const target = properties.Target as { Arn?: unknown; Input?: unknown } | undefined;
    const functionLogicalId = (target?.Arn as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];
    if (!functionLogicalId || resources[functionLogicalId]?.Type !== 'AWS::Lambda::Function') continue;
    const fn = resources[functionLogicalId]!;
    const entry = fn.Metadata?.[ENTRY_METADATA_KEY];
    if (typeof entry !== 'string') throw new Error(`function ${functionLogicalId} of schedule ${scheduleId} has no ${ENTRY_METADATA_KEY} metadata`);
    const variables = ((fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {}) as Record<string, unknown>;
    targets.push({
      scheduleLogicalId: scheduleId,
      expression: String(properties.ScheduleExpression),
      ...(typeof properties.ScheduleExpressionTimezone === 'string' ? { timezone: properties.ScheduleExpressionTimezone } : {}),
      input: String(target?.Input ?? '{}'),
      functionLogicalId,
      entry,
      environment: Object.fromEntries(Object.entries(variables).map(([key, value]) => [key, resolveToken(value, resources)])),
    });
  }
  return targets;
}
