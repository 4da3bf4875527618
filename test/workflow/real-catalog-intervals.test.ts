// The live table of test/support/real-catalog.ts with an IDENTITY column
// too, published by replace-intervals: five publishes and a rollback
// rewrite its rows in place, and every property stays as it was, the rows
// written are numbered on from the live table's, the restricted reader
// sees only its rows and every run SUCCEEDS.
import '../support/wide-intervals-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { expectNumberedOn, identityNumbers } from '../support/identity-column.ts';
import { arrangeCatalog, expectCatalogKept } from '../support/real-catalog.ts';
import { caughtMessage, inputFor, LIVE, PIPELINE, useFork, useWorkflowFixture } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_catalog_intervals', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  return { before: await arrangeCatalog(wf, { identity: true }) };
});

describe('a live table with everything a production one carries, published by replace-intervals', () => {
  const wf = useFork(fixture);

  it('keeps every property through five publishes and a rollback, numbering on, the restricted reader seeing only its rows after each', async () => {
    expect(PIPELINE.publishMode).toBe('replace-intervals');
    const { before } = fixture.arranged;
    const runs = [...[5, 6, 7, 8, 9].map((day) => [day, inputFor(day)] as const), [8, { pipeline: PIPELINE.name, rollback: {} }] as const];
    let numbers = await identityNumbers(wf, LIVE);
    for (const [day, input] of runs) {
      const result = await wf.run(input, `catalog-intervals-${day}-${'rollback' in input ? 'rollback' : 'publish'}`);
      expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
      await expectCatalogKept(wf, before, (await wf.expected(day)).rows);
      const after = await identityNumbers(wf, LIVE);
      expectNumberedOn(numbers, after);
      numbers = after;
    }
  });
});
