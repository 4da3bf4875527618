// A live table as production ones are (test/support/real-catalog.ts: 30
// commented columns, a default, grants of five privileges to a user, a
// group, a role and an Identity Center name, column grants, an RLS policy,
// three masking policies attached three times each, two views, another table's
// foreign key), published by swap. Through five swaps and a rollback,
// every property stays as it was, the restricted reader sees only its
// rows, every run SUCCEEDS, and each swap, too large for 40 statements,
// carried its grants, keys and policies through run_statements.
import '../support/wide-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { decodeStatements } from '../../domain/publish/sql/one-transaction.ts';
import { MAX_BATCH_STATEMENTS } from '../../domain/sql/statement.ts';
import { arrangeCatalog, expectCatalogKept } from '../support/real-catalog.ts';
import { caughtMessage, inputFor, type UseWorkflowOptions, useFork, useWorkflowFixture } from '../support/workflow.ts';

/** Each swap transaction's statements, as the Data API received them. */
const swaps = new Map<string, readonly string[]>();
const OPTIONS: UseWorkflowOptions = {
  statementError: ({ index, sqls, name }) => {
    if (index === 0 && (name?.includes(':publish:swap:') || name?.includes(':rollback:swap:'))) swaps.set(name, sqls);
    return undefined;
  },
};

const fixture = useWorkflowFixture(
  'wf_catalog',
  async (wf) => {
    await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
    return { before: await arrangeCatalog(wf) };
  },
  OPTIONS,
);

describe('a live table with everything a production one carries, published by swap', () => {
  const wf = useFork(fixture, OPTIONS);

  it('keeps every property through five swaps and a rollback, each one transaction, the restricted reader seeing only its rows after each', async () => {
    const { before } = fixture.arranged;
    const runs = [...[5, 6, 7, 8, 9].map((day) => [day, inputFor(day)] as const), [8, { pipeline: inputFor(9).pipeline, rollback: {} }] as const];
    for (const [day, input] of runs) {
      swaps.clear();
      const result = await wf.run(input, `catalog-${day}-${'rollback' in input ? 'rollback' : 'publish'}`);
      expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
      await expectCatalogKept(wf, before, (await wf.expected(day)).rows);
      // One batch within the Data API's limit; a publish's carry-over packed, more than 40 statements in all
      // (a rollback's restored version keeps the policies it had: it needs fewer).
      const [sqls, ...more] = [...swaps.values()];
      expect(more).toEqual([]);
      expect(sqls!.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
      if ('rollback' in input) continue;
      const packed = sqls!
        .filter((s) => s.includes('.run_statements('))
        .flatMap((s) => decodeStatements(s.slice(s.indexOf("('") + 2, -2).replaceAll("''", "'")));
      expect(sqls!.length - 1 + packed.length).toBeGreaterThan(MAX_BATCH_STATEMENTS);
      expect(packed.filter((s) => s.startsWith('ATTACH MASKING POLICY'))).toHaveLength(9);
    }
  });
});
