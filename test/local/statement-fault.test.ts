// The endpoint's injected database errors (runner.ts StatementFault): the
// named part of a transaction batch fails with the given message after the
// parts before it ran, and the whole transaction rolls back, as a database
// error there does on Redshift.
import { BatchExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilEnded, useWarehouse, type Warehouse } from '../support/warehouse.ts';

const CONFLICT = 'ERROR: 1023 DETAIL: Serializable isolation violation on table - 100, transactions forming the cycle are: 1, 2 (pid:3)';

let wh: Warehouse;
beforeAll(async () => {
  wh = await useWarehouse('statement_fault');
  await wh.query('CREATE TABLE public.a (n int); CREATE TABLE public.b (n int)');
});
afterAll(() => wh?.close());

describe('statementError', () => {
  it('fails the named part with its message after the earlier parts ran, rolling the whole batch back', async () => {
    const seen: { sql: string; index: number; name?: string }[] = [];
    const endpoint = await wh.otherEndpoint({
      statementError: ({ sql, index, name }) => {
        seen.push({ sql, index, ...(name !== undefined ? { name } : {}) });
        return sql.startsWith('ALTER TABLE public.b') ? CONFLICT : undefined;
      },
    });
    const { Id } = await endpoint.client.send(
      new BatchExecuteStatementCommand({
        ...wh.target,
        StatementName: 'swap',
        Sqls: ['ALTER TABLE public.a RENAME TO a_old', 'ALTER TABLE public.b RENAME TO a', 'INSERT INTO public.a VALUES (1)'],
      }),
    );
    const described = await untilEnded(endpoint.client, Id!);

    expect(described.Status).toBe('FAILED');
    expect(described.Error).toBe(CONFLICT);
    expect(seen).toEqual([
      { sql: 'ALTER TABLE public.a RENAME TO a_old', index: 0, name: 'swap' },
      { sql: 'ALTER TABLE public.b RENAME TO a', index: 1, name: 'swap' },
    ]);
    // The first rename ran and was rolled back with the rest.
    const tables = await wh.query<{ name: string }>(`SELECT relname AS name FROM pg_class WHERE relname IN ('a', 'b', 'a_old') ORDER BY 1`);
    expect(tables.map((t) => t.name)).toEqual(['a', 'b']);
  });
});
