// The Data API's result limits, through the real SDK client: a result row
// over 64 KB, or a result over the size limit, fails the statement as the
// Data API does, and nothing of its result can be read.
import { BatchExecuteStatementCommand, ExecuteStatementCommand, GetStatementResultCommand, ValidationException } from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_API_ROW_MAX_BYTES } from '../../domain/aws-limits.ts';
import { untilEnded, useWarehouse, type Warehouse } from '../support/warehouse.ts';

let wh: Warehouse;
beforeAll(async () => {
  wh = await useWarehouse('data_api_limits');
});
afterAll(() => wh?.close());

const rowOf = (bytes: number) => `SELECT repeat('x', ${bytes}) AS v`;

describe('a result row', () => {
  it('of 64 KB is returned whole', async () => {
    const [[value]] = (await wh.select(rowOf(DATA_API_ROW_MAX_BYTES))) as [[string]];
    expect(value).toHaveLength(DATA_API_ROW_MAX_BYTES);
  });

  it('over 64 KB fails the statement with the Data API error, and its result cannot be read', async () => {
    // Two columns of 32 KB and one byte: the row counts, not the column.
    const half = DATA_API_ROW_MAX_BYTES / 2;
    const failed = await wh.run(`SELECT repeat('a', ${half}) AS a, repeat('b', ${half + 1}) AS b`);
    expect(failed.Status).toBe('FAILED');
    expect(failed.Error).toMatch(/^Packet for query is too large: a result row of 65537 bytes; the Data API returns rows of at most 65536 bytes\./);
    const read = wh.client.send(new GetStatementResultCommand({ Id: failed.Id! }));
    await expect(read).rejects.toBeInstanceOf(ValidationException);
    await expect(read).rejects.toThrow(/Query does not have result\. Status: FAILED\./);
  });

  it('over 64 KB in one part of a batch fails the batch', async () => {
    const { Id } = await wh.client.send(new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['SELECT 1', rowOf(DATA_API_ROW_MAX_BYTES + 1)] }));
    const done = await untilEnded(wh.client, Id!);
    expect(done.Status).toBe('FAILED');
    expect(done.SubStatements?.map((s) => s.Status)).toEqual(['FINISHED', 'FAILED']);
    expect(done.SubStatements?.[1]?.Error).toMatch(/^Packet for query is too large/);
  });
});

describe('a whole result', () => {
  it('over the size limit fails the statement, though every row is small', async () => {
    // 500 MB by default: an endpoint with a smaller limit shows the rule.
    const small = await wh.otherEndpoint({ maxResultBytes: 100_000 });
    const many = "SELECT repeat('x', 1000) AS v FROM generate_series(1, 101)";
    const { Id } = await small.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: many }));
    const failed = await untilEnded(small.client, Id!);
    expect(failed.Status).toBe('FAILED');
    expect(failed.Error).toBe('Database response exceeded size limit: a result of 101000 bytes; the Data API returns at most 100000 bytes.');
    await expect(small.client.send(new GetStatementResultCommand({ Id: Id! }))).rejects.toThrow(/Query does not have result/);

    expect(await wh.select(many)).toHaveLength(101);
  });
});
