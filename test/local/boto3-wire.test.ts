// The local Data API and Step Functions endpoints as boto3 (and so the AWS
// CLI, on the same botocore) talks to them: its serializer, its parser of
// timestamps and errors, its client-side validation against the model and
// its paginators. Skipped where python3 cannot import boto3.
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { type CfnFunction, Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { DefinitionBody, JsonPath, Map as MapState, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRY_METADATA_KEY } from '../../lib/workflow-steps.ts';
import { LocalRunner } from '../../local/runner.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from '../../local/step-functions-api.ts';
import type { Template as CfnTemplate } from '../../local/template.ts';
import { type Boto3Call, type Boto3Result, boto3Calls, hasBoto3 } from '../support/boto3.ts';
import { useWarehouse, type Warehouse } from '../support/warehouse.ts';

/** A Lambda Task, then a Map of another over the input's items. */
function template(): CfnTemplate {
  const stack = new Stack(new App(), 'Boto3Wire');
  const work = new LambdaFunction(stack, 'Work', {
    runtime: Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: Code.fromInline('exports.handler = async () => ({})'),
  });
  (work.node.defaultChild as CfnFunction).addMetadata(ENTRY_METADATA_KEY, 'test/support/history-work.ts');
  const map = new MapState(stack, 'Items', { itemsPath: '$.items', resultPath: JsonPath.DISCARD });
  map.itemProcessor(new LambdaInvoke(stack, 'Item', { lambdaFunction: work, payloadResponseOnly: true }));
  const first = new LambdaInvoke(stack, 'First', { lambdaFunction: work, payloadResponseOnly: true, resultPath: '$.first' });
  new StateMachine(stack, 'Machine', { definitionBody: DefinitionBody.fromChainable(first.next(map)) });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

const response = (result: Boto3Result | undefined) => {
  if (!result || !('response' in result)) throw new Error(`expected a response, got ${JSON.stringify(result)}`);
  return result.response;
};

describe.skipIf(!hasBoto3())('boto3 against the local endpoints', () => {
  let wh: Warehouse;
  let runner: LocalRunner;
  let sfn: LocalStepFunctionsApi;
  let executionArn: string;
  let connection: { ClusterIdentifier: string; Database: string; DbUser: string };
  const call = async (...calls: Boto3Call[]) => boto3Calls({ 'redshift-data': wh.endpoint, stepfunctions: sfn.endpoint }, calls);

  beforeAll(async () => {
    wh = await useWarehouse('boto3');
    for (const sql of [
      'CREATE SCHEMA sales',
      'CREATE TABLE sales.orders (id int8 NOT NULL, amount numeric(12,2), region varchar(16))',
      'CREATE TABLE sales.order_lines (order_id int8, sku char(8))',
      'CREATE TABLE sales.refunds (order_id int8)',
      'CREATE VIEW sales.big_orders AS SELECT id FROM sales.orders WHERE amount > 100',
    ]) {
      await wh.query(sql);
    }
    connection = { ClusterIdentifier: 'local', Database: wh.target.Database, DbUser: wh.target.DbUser };
    runner = await LocalRunner.create({ env: {}, template: template() });
    sfn = await startLocalStepFunctionsApi(runner);
    const running = await runner.start({ n: 1, items: [{ n: 2 }, { n: 3 }] }, { name: 'boto3-run' });
    executionArn = running.executionId;
    await running.result;
  });

  afterAll(async () => {
    await sfn?.close();
    runner?.close();
    await wh?.close();
  });

  it('lists databases, and tables by schema and table pattern, one page at a time', async () => {
    const [databases, firstPage, all] = await call(
      { service: 'redshift-data', operation: 'list_databases', params: connection },
      { service: 'redshift-data', operation: 'list_tables', params: { ...connection, SchemaPattern: 'sales', TablePattern: 'order%', MaxResults: 1 } },
      { service: 'redshift-data', operation: 'list_tables', params: { ...connection, SchemaPattern: 'sal_s' }, paginate: { PageSize: 3 } },
    );
    expect(response(databases).Databases).toContain(wh.target.Database);
    expect(response(firstPage)).toEqual({ Tables: [{ name: 'order_lines', schema: 'sales', type: 'TABLE' }], NextToken: expect.any(String) });
    if (!all || !('pages' in all)) throw new Error(JSON.stringify(all));
    // boto3's paginator follows NextToken: two pages of at most three.
    expect(all.pages.map((page) => (page.Tables as { name: string }[]).map((t) => t.name))).toEqual([['big_orders', 'order_lines', 'orders'], ['refunds']]);
  });

  it("describes a table's columns in the shape botocore parses", async () => {
    const [described] = await call({ service: 'redshift-data', operation: 'describe_table', params: { ...connection, Schema: 'sales', Table: 'orders' } });
    expect(response(described).TableName).toBe('orders');
    expect(response(described).ColumnList).toEqual([
      expect.objectContaining({ name: 'id', typeName: 'int8', nullable: 0, schemaName: 'sales', tableName: 'orders' }),
      expect.objectContaining({ name: 'amount', typeName: 'numeric', precision: 12, scale: 2 }),
      expect.objectContaining({ name: 'region', typeName: 'varchar', length: 16, isCaseSensitive: true }),
    ]);
  });

  it('answers a request the connection cannot use with a ValidationException botocore raises as a ClientError', async () => {
    const [refused] = await call({
      service: 'redshift-data',
      operation: 'list_schemas',
      params: { Database: wh.target.Database, WorkgroupName: 'local', DbUser: 'someone' },
    });
    expect(refused).toEqual({ error: { code: 'ValidationException', message: expect.stringMatching(/DbUser is not supported for a serverless workgroup/) } });
  });

  it('describes and lists the state machine, its creation date a timestamp botocore parses', async () => {
    const [described, listed] = await call(
      { service: 'stepfunctions', operation: 'describe_state_machine', params: { stateMachineArn: runner.workflow.stateMachineArn } },
      { service: 'stepfunctions', operation: 'list_state_machines', params: { maxResults: 10 } },
    );
    expect(response(described)).toMatchObject({
      stateMachineArn: runner.workflow.stateMachineArn,
      status: 'ACTIVE',
      type: 'STANDARD',
      roleArn: expect.stringMatching(/^arn:aws:iam::000000000000:role\//),
      creationDate: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(JSON.parse(response(described).definition as string)).toEqual(runner.workflow.definition);
    expect(response(listed).stateMachines).toEqual([expect.objectContaining({ stateMachineArn: runner.workflow.stateMachineArn, type: 'STANDARD' })]);
  });

  it("gives an execution's history, every page of it, with the Lambda invocations and the Map's start and end", async () => {
    const [history] = await call({ service: 'stepfunctions', operation: 'get_execution_history', params: { executionArn }, paginate: { PageSize: 10 } });
    if (!history || !('pages' in history)) throw new Error(JSON.stringify(history));
    const events = history.pages.flatMap((page) => page.events as { id: number; previousEventId: number; type: string; timestamp: string }[]);
    expect(history.pages.length).toBeGreaterThan(1);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events.slice(0, 6).map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionSucceeded',
      'TaskStateExited',
    ]);
    expect(events.filter((e) => e.type.startsWith('MapState')).map((e) => e.type)).toEqual([
      'MapStateEntered',
      'MapStateStarted',
      'MapStateSucceeded',
      'MapStateExited',
    ]);
    expect(events.at(-1)?.type).toBe('ExecutionSucceeded');
    expect(events[0]!.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('answers a malformed ARN with InvalidArn and an unknown one with ExecutionDoesNotExist', async () => {
    const unknown = `${runner.workflow.stateMachineArn.replace(':stateMachine:', ':execution:')}:never-ran`;
    const [invalid, wrongType, missing] = await call(
      { service: 'stepfunctions', operation: 'describe_execution', params: { executionArn: 'not-an-arn' } },
      { service: 'stepfunctions', operation: 'get_execution_history', params: { executionArn: runner.workflow.stateMachineArn } },
      { service: 'stepfunctions', operation: 'describe_execution', params: { executionArn: unknown } },
    );
    expect(invalid).toEqual({ error: { code: 'InvalidArn', message: "Invalid Arn: 'Invalid ARN prefix: not-an-arn'" } });
    expect(wrongType).toEqual({ error: { code: 'InvalidArn', message: "Invalid Arn: 'Resource type not valid in this context: statemachine'" } });
    expect(missing).toEqual({ error: { code: 'ExecutionDoesNotExist', message: `Execution Does Not Exist: '${unknown}'` } });
  });
});
