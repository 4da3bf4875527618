// Map states in Distributed mode on the local runner (local/distributed-map.ts):
// the CDK DistributedMap construct, synthesized, runs its items as child
// executions, each with a history of its own, batched, at most
// MaxConcurrency at a time, and fails the Map past its tolerated failures.
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { type CfnFunction, Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { DefinitionBody, DistributedMap, ItemBatcher, JsonPath, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { afterEach, describe, expect, it } from 'vitest';
import { ENTRY_METADATA_KEY } from '../../lib/workflow-steps.ts';
import { LocalRunner } from '../../local/runner.ts';
import type { Template as CfnTemplate } from '../../local/template.ts';
import { hold, observed, resetObserved } from '../support/distributed-map-work.ts';
import { until } from '../support/until.ts';

function templateWith(props: { maxConcurrency: number; toleratedFailureCount?: number }): CfnTemplate {
  const stack = new Stack(new App(), 'DistributedMapTest');
  const work = new LambdaFunction(stack, 'Work', {
    runtime: Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: Code.fromInline('exports.handler = async () => ({})'),
  });
  (work.node.defaultChild as CfnFunction).addMetadata(ENTRY_METADATA_KEY, 'test/support/distributed-map-work.ts');
  const map = new DistributedMap(stack, 'Chunks', {
    itemsPath: JsonPath.stringAt('$.items'),
    itemSelector: { 'n.$': '$$.Map.Item.Value.n', 'fail.$': '$$.Map.Item.Value.fail' },
    itemBatcher: new ItemBatcher({ maxItemsPerBatch: 3, batchInput: { 'run.$': '$.run' } }),
    maxConcurrency: props.maxConcurrency,
    ...(props.toleratedFailureCount === undefined ? {} : { toleratedFailureCount: props.toleratedFailureCount }),
    resultPath: '$.results',
  });
  map.itemProcessor(new LambdaInvoke(stack, 'SumBatch', { lambdaFunction: work, payloadResponseOnly: true }));
  new StateMachine(stack, 'Machine', { definitionBody: DefinitionBody.fromChainable(map) });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

const items = (count: number, failAt?: number) => Array.from({ length: count }, (_, i) => ({ n: i + 1, fail: i === failAt }));

let runner: LocalRunner | undefined;
afterEach(() => {
  runner?.close();
  resetObserved();
});

describe('a distributed Map on the local runner', () => {
  it('runs batches of items as child executions, at most MaxConcurrency at once, results in item order', async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith({ maxConcurrency: 2 }) });
    const open = hold();
    const running = await runner.start({ run: 'r1', items: items(10) });
    await until(() => observed.running === 2, 'two children running');
    open();
    const result = await running.result;

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    // 10 items in batches of 3: 4 children, their outputs in item order.
    expect((result.output as { results: unknown[] }).results).toEqual([
      { run: 'r1', sum: 6, count: 3 },
      { run: 'r1', sum: 15, count: 3 },
      { run: 'r1', sum: 24, count: 3 },
      { run: 'r1', sum: 10, count: 1 },
    ]);
    expect(observed.peak).toBe(2);
    expect(result.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    expect(result.childExecutions.every((c) => c.events > 0)).toBe(true);
  });

  it("keeps each child's events out of the parent's history: the parent's grows by nothing per item", async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith({ maxConcurrency: 4 }) });
    const small = await runner.run({ run: 'small', items: items(3) });
    const large = await runner.run({ run: 'large', items: items(300) });
    expect(large.status).toBe('SUCCEEDED');
    expect(large.childExecutions).toHaveLength(100);
    expect(large.events.length).toBe(small.events.length);
    expect(Math.max(...large.childExecutions.map((c) => c.events))).toBe(Math.max(...small.childExecutions.map((c) => c.events)));
  });

  it('fails the Map with States.ExceedToleratedFailureThreshold past its tolerated failures, and succeeds within them', async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith({ maxConcurrency: 1 }) });
    const failed = await runner.run({ run: 'f', items: items(9, 4) });
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toBe('States.ExceedToleratedFailureThreshold');
    expect(failed.cause).toMatch(/1 of 3 child executions failed \(the last: ItemFailed/);
    // One at a time: the child after the failed one never started.
    expect(failed.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'FAILED']);
    runner.close();

    runner = await LocalRunner.create({ env: {}, template: templateWith({ maxConcurrency: 1, toleratedFailureCount: 1 }) });
    const tolerated = await runner.run({ run: 't', items: items(9, 4) });
    expect(tolerated.status, `${tolerated.error}: ${tolerated.cause}`).toBe('SUCCEEDED');
    expect(tolerated.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'FAILED', 'SUCCEEDED']);
  });

  it('stops the running children when the parent execution is stopped', async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith({ maxConcurrency: 2 }) });
    hold();
    const running = await runner.start({ run: 'r3', items: items(10) });
    await until(() => observed.running === 2, 'two children running');
    running.abort();
    const result = await running.result;

    expect(result.status).toBe('ABORTED');
    // The two running children were stopped, not left to finish, and no further child started.
    expect(result.childExecutions.map((c) => c.status)).toEqual(['ABORTED', 'ABORTED']);
    expect(observed.calls).toBe(2);
  });
});
