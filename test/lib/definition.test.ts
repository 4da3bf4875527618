import { describe, expect, it } from 'vitest';
import { type CfnTemplate, localFunctionArn, stateMachineDefinition, statusChangeTargets } from '../../lib/definition.ts';

/** The shape CDK synthesizes: an Fn::Join of JSON fragments, GetAtt of functions and Ref of the partition and a topic. */
const template: CfnTemplate = {
  Resources: {
    PlanFn: { Type: 'AWS::Lambda::Function', Metadata: { 'atomic-publish:entry': 'functions/plan/index.ts' } },
    ItemFn: { Type: 'AWS::Lambda::Function', Metadata: { 'atomic-publish:entry': 'functions/load-chunk/index.ts' } },
    InvokeFn: { Type: 'AWS::Lambda::Function' },
    Topic: { Type: 'AWS::SNS::Topic' },
    Machine: {
      Type: 'AWS::StepFunctions::StateMachine',
      Properties: {
        DefinitionString: {
          'Fn::Join': [
            '',
            [
              '{"StartAt":"Plan","States":{"Plan":{"Type":"Task","Resource":"',
              { 'Fn::GetAtt': ['PlanFn', 'Arn'] },
              '","Next":"Items"},"Items":{"Type":"Map","ItemProcessor":{"StartAt":"Item","States":{"Item":{"Type":"Task","Resource":"',
              { 'Fn::GetAtt': ['ItemFn', 'Arn'] },
              '","End":true}}},"Next":"Invoke"},"Invoke":{"Type":"Task","Resource":"arn:',
              { Ref: 'AWS::Partition' },
              ':states:::lambda:invoke","Parameters":{"FunctionName":"',
              { 'Fn::GetAtt': ['InvokeFn', 'Arn'] },
              '"},"Next":"Notify"},"Notify":{"Type":"Task","Resource":"arn:',
              { Ref: 'AWS::Partition' },
              ':states:::sns:publish","Parameters":{"TopicArn":"',
              { Ref: 'Topic' },
              '","Message":"x"},"Next":"Where"},"Where":{"Type":"Pass","Result":"',
              { Ref: 'AWS::Region' },
              '/',
              { Ref: 'AWS::AccountId' },
              '","End":true}}}',
            ],
          ],
        },
      },
    },
  },
};

describe('stateMachineDefinition', () => {
  it('resolves the Fn::Join into ASL with readable placeholder ARNs for functions, the partition and a topic', () => {
    const { definition, stateMachineLogicalId } = stateMachineDefinition(template);
    expect(stateMachineLogicalId).toBe('Machine');
    expect(definition.StartAt).toBe('Plan');
    expect(definition.States.Plan?.Resource).toBe('arn:aws:lambda:local:000000000000:function:PlanFn');
    expect(definition.States.Invoke?.Resource).toBe('arn:aws:states:::lambda:invoke');
    expect(definition.States.Notify?.Parameters?.TopicArn).toBe('arn:aws:sns:local:000000000000:Topic');
    expect(definition.States.Where?.Result).toBe('local/000000000000');
  });

  it('maps every Task that invokes a function, nested Map states and lambda:invoke included, to the function and its entry', () => {
    const { taskFunctions, taskEntries } = stateMachineDefinition(template);
    expect(taskFunctions).toEqual({ Plan: 'PlanFn', Item: 'ItemFn', Invoke: 'InvokeFn' });
    expect(taskEntries).toEqual({ Plan: 'functions/plan/index.ts', Item: 'functions/load-chunk/index.ts' });
    expect(localFunctionArn('PlanFn')).toBe('arn:aws:lambda:local:000000000000:function:PlanFn');
  });

  it('accepts a plain-string DefinitionString', () => {
    const plain: CfnTemplate = {
      Resources: {
        M: { Type: 'AWS::StepFunctions::StateMachine', Properties: { DefinitionString: '{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}' } },
      },
    };
    expect(stateMachineDefinition(plain).definition.States.A).toEqual({ Type: 'Succeed' });
  });

  it('asks for a logical id when the template holds no or several state machines, and names unknown references', () => {
    expect(() => stateMachineDefinition({ Resources: {} })).toThrow(/found 0/);
    const two: CfnTemplate = { Resources: { ...template.Resources, Other: template.Resources!.Machine! } };
    expect(() => stateMachineDefinition(two)).toThrow(/found 2: pass its logical id/);
    expect(stateMachineDefinition(two, 'Other').stateMachineLogicalId).toBe('Other');
    const dangling: CfnTemplate = {
      Resources: { M: { Type: 'AWS::StepFunctions::StateMachine', Properties: { DefinitionString: { 'Fn::Join': ['', ['"', { Ref: 'Gone' }, '"']] } } } },
    };
    expect(() => stateMachineDefinition(dangling)).toThrow(/unknown resource Gone/);
  });
});

describe('statusChangeTargets', () => {
  const rule = (detailType: string, target: unknown) => ({
    Type: 'AWS::Events::Rule',
    Properties: {
      EventPattern: {
        source: ['aws.states'],
        'detail-type': [detailType],
        detail: { status: ['ABORTED', 'TIMED_OUT'], stateMachineArn: [{ Ref: 'Machine' }] },
      },
      Targets: [{ Arn: target, Id: 'Target0' }],
    },
  });
  const template: CfnTemplate = {
    Resources: {
      Machine: { Type: 'AWS::StepFunctions::StateMachine', Properties: { DefinitionString: '{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}' } },
      Cancel: { Type: 'AWS::Lambda::Function', Metadata: { 'atomic-publish:entry': 'functions/cancel-orphans/index.ts' } },
      Stopped: rule('Step Functions Execution Status Change', { 'Fn::GetAtt': ['Cancel', 'Arn'] }),
      OtherEvents: rule('Redshift Data Statement Status Change', { 'Fn::GetAtt': ['Cancel', 'Arn'] }),
      ToATopic: rule('Step Functions Execution Status Change', { Ref: 'Topic' }),
    },
  };

  it('finds the Lambda targets of rules on execution status changes, with the pattern resolved as the runner matches it', () => {
    expect(statusChangeTargets(template, 'Step Functions Execution Status Change')).toEqual([
      {
        ruleLogicalId: 'Stopped',
        detailPattern: { status: ['ABORTED', 'TIMED_OUT'], stateMachineArn: ['arn:aws:states:local:000000000000:stateMachine:Machine'] },
        functionLogicalId: 'Cancel',
        entry: 'functions/cancel-orphans/index.ts',
      },
    ]);
  });

  it('refuses a target function without its entry metadata', () => {
    const bare: CfnTemplate = { Resources: { ...template.Resources, Cancel: { Type: 'AWS::Lambda::Function' } } };
    expect(() => statusChangeTargets(bare, 'Step Functions Execution Status Change')).toThrow(
      /function Cancel of rule Stopped has no atomic-publish:entry metadata/,
    );
  });
});
