// The live table of test/support/real-catalog.ts with an IDENTITY column
// too, published by a swap with snapshotReaders 'in-place': five publishes
// and a rollback rewrite its rows in one transaction each, and every
// property stays as it was (the identity's seed and step among its
// defaults), its numbers count on from the live table's, the restricted
// reader sees only its rows, every run SUCCEEDS and the live table is the
// same table throughout.
import '../support/wide-in-place-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { expectNumberedOn, identityNumbers } from '../support/identity-column.ts';
import { arrangeCatalog, expectCatalogKept } from '../support/real-catalog.ts';
import { caughtMessage, inputFor, LIVE, PIPELINE, useFork, useWorkflowFixture } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_catalog_in_place', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  return { before: await arrangeCatalog(wf, { identity: true }) };
});

describe('a live table with everything a production one carries and an IDENTITY column, published in place', () => {
  const wf = useFork(fixture);

  it('keeps every property through five publishes and a rollback, numbering on, the restricted reader seeing only its rows after each', async () => {
    expect(PIPELINE.snapshotReaders).toBe('in-place');
    const { before } = fixture.arranged;
    const oid = async () => String((await wf.query<{ oid: string }>(`SELECT $1::regclass::oid::text AS oid`, [LIVE]))[0]!.oid);
    const table = await oid();
    const runs = [...[5, 6, 7, 8, 9].map((day) => [day, inputFor(day)] as const), [8, { pipeline: PIPELINE.name, rollback: {} }] as const];
    let numbers = await identityNumbers(wf, LIVE);
    for (const [day, input] of runs) {
      const result = await wf.run(input, `catalog-in-place-${day}-${'rollback' in input ? 'rollback' : 'publish'}`);
      expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
      await expectCatalogKept(wf, before, (await wf.expected(day)).rows);
      const after = await identityNumbers(wf, LIVE);
      expectNumberedOn(numbers, after);
      numbers = after;
      expect(await oid()).toBe(table);
    }
  });
});
