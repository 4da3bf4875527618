// Step Functions fails an execution whose history reaches 25,000 events; the
// local runner counts each execution's history as Step Functions would
// (local/history.ts) and fails it the same way. A Distributed Map's children
// each have a history of their own, which is how a long batch stays inside.
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { DefinitionBody, DistributedMap, ItemBatcher, JsonPath, Map as MapState, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { afterEach, describe, expect, it } from 'vitest';
import { HISTORY_LIMIT_ERROR, historyEvents, MAX_HISTORY_EVENTS } from '../../local/history.ts';
import { LocalRunner } from '../../local/runner.ts';
import type { Template as CfnTemplate } from '../../local/template.ts';

/** An inline Map of a Pass per item, or the same in a Distributed Map whose children take `perChild` items each. */
function templateWith(perChild?: number): CfnTemplate {
  const stack = new Stack(new App(), 'HistoryTest');
  const inline = new MapState(stack, 'Items', { itemsPath: JsonPath.stringAt(perChild === undefined ? '$.items' : '$.Items'), resultPath: JsonPath.DISCARD });
  inline.itemProcessor(new Pass(stack, 'Item'));
  const start =
    perChild === undefined
      ? inline
      : new DistributedMap(stack, 'Windows', { itemsPath: JsonPath.stringAt('$.items'), itemBatcher: new ItemBatcher({ maxItemsPerBatch: perChild }), resultPath: JsonPath.DISCARD }).itemProcessor(inline);
  new StateMachine(stack, 'Machine', { definitionBody: DefinitionBody.fromChainable(start) });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

const ITEMS = Array.from({ length: 7000 }, (_, i) => i);

let runner: LocalRunner | undefined;
afterEach(() => runner?.close());

describe('execution history on the local runner', () => {
  it('counts a Task entered with its invocation, a retry as another invocation, a Map with its start and end', () => {
    const event = (type: string, stateType?: string) => ({ type, timestamp: 0, ...(stateType ? { state: { name: 's', type: stateType, input: {} } } : {}) });
    expect(historyEvents(event('StateEntered', 'Task'))).toBe(4);
    expect(historyEvents(event('StateRetried', 'Task'))).toBe(3);
    expect(historyEvents(event('StateEntered', 'Map'))).toBe(2);
    expect(historyEvents(event('StateExited', 'Map'))).toBe(2);
    expect(historyEvents(event('StateEntered', 'Pass'))).toBe(1);
    expect(historyEvents(event('MapIterationStarted'))).toBe(1);
    expect(historyEvents(event('StateCaught', 'Task'))).toBe(0);
  });

  it(`fails an execution whose history passes ${MAX_HISTORY_EVENTS} events`, async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith() });
    const result = await runner.run({ items: ITEMS });

    expect(result.status).toBe('FAILED');
    expect(result.error).toBe(HISTORY_LIMIT_ERROR);
    expect(result.historyEvents).toBeGreaterThan(MAX_HISTORY_EVENTS);
  });

  it('runs the same items as child executions of a Distributed Map, each history well inside the limit', async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith(1000) });
    const result = await runner.run({ items: ITEMS });

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(result.childExecutions).toHaveLength(7);
    // Four events per item (iteration started and succeeded, Pass entered and exited) plus a few per execution.
    for (const child of result.childExecutions) expect(child.historyEvents).toBeGreaterThan(4000);
    for (const child of result.childExecutions) expect(child.historyEvents).toBeLessThan(4100);
    expect(result.historyEvents).toBeLessThan(20);
  });
});
