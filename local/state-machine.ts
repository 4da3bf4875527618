/**
 * The state machine as the template deploys it, for what Step Functions
 * says about it: DescribeStateMachine's answer, and the role its
 * executions' histories name. Its ARNs (role, log group) are the local
 * placeholders lib/definition.ts resolves tokens to.
 * https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeStateMachine.html
 */
import { LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION } from '../lib/definition.ts';
import type { SynthesizedWorkflow, Template } from './template.ts';

/** ARNs of the resources the state machine's definition is deployed with (its role, its log group), as they resolve locally. */
function resourceArn(token: unknown, resources: Template['Resources']): string | undefined {
  const [id] = (token as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'] ?? [];
  const resource = id === undefined ? undefined : resources[id];
  if (resource?.Type === 'AWS::IAM::Role') return `arn:${LOCAL_PARTITION}:iam::${LOCAL_ACCOUNT}:role/${id}`;
  if (resource?.Type === 'AWS::Logs::LogGroup') {
    const name = resource.Properties?.LogGroupName;
    return `arn:${LOCAL_PARTITION}:logs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:log-group:${typeof name === 'string' ? name : id}:*`;
  }
  return typeof token === 'string' ? token : undefined;
}

/** The state machine's IAM role, as its template resource names it. */
export function stateMachineRoleArn(workflow: SynthesizedWorkflow): string {
  const { template, stateMachineArn } = workflow;
  const name = stateMachineArn.slice(stateMachineArn.lastIndexOf(':') + 1);
  return resourceArn(template.Resources[name]?.Properties?.RoleArn, template.Resources) ?? `arn:${LOCAL_PARTITION}:iam::${LOCAL_ACCOUNT}:role/${name}Role`;
}

/** DescribeStateMachine's answer for the state machine, from its template resource. */
export function describeStateMachine(workflow: SynthesizedWorkflow, creationDate: number): Record<string, unknown> {
  const { template, definition, stateMachineArn } = workflow;
  const name = stateMachineArn.slice(stateMachineArn.lastIndexOf(':') + 1);
  const properties = template.Resources[name]?.Properties ?? {};
  const logging = properties.LoggingConfiguration as
    | { Level?: string; IncludeExecutionData?: boolean; Destinations?: { CloudWatchLogsLogGroup?: { LogGroupArn?: unknown } }[] }
    | undefined;
  const destinations = (logging?.Destinations ?? []).flatMap((d) => {
    const logGroupArn = resourceArn(d.CloudWatchLogsLogGroup?.LogGroupArn, template.Resources);
    return logGroupArn ? [{ cloudWatchLogsLogGroup: { logGroupArn } }] : [];
  });
  return {
    stateMachineArn,
    name,
    status: 'ACTIVE',
    definition: JSON.stringify(definition),
    roleArn: stateMachineRoleArn(workflow),
    type: String(properties.StateMachineType ?? 'STANDARD'),
    creationDate,
    loggingConfiguration: {
      level: logging?.Level ?? 'OFF',
      includeExecutionData: logging?.IncludeExecutionData ?? false,
      ...(destinations.length > 0 ? { destinations } : {}),
    },
    tracingConfiguration: { enabled: (properties.TracingConfiguration as { Enabled?: boolean } | undefined)?.Enabled === true },
    // Step Functions encrypts with a key of its own unless a customer key is configured.
    encryptionConfiguration: { type: 'AWS_OWNED_KEY' },
  };
}
