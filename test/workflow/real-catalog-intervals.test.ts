// The live table of test/support/real-catalog.ts, published by
// replace-intervals: five publishes and a rollback rewrite its rows in
// place, and every property stays as it was, the restricted reader sees
// only its rows and every run SUCCEEDS.
import '../support/wide-intervals-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { arrangeCatalog, expectCatalogKept } from '../support/real-catalog.ts';
import { caughtMessage, inputFor, PIPELINE, useFork, useWorkflowFixture } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_catalog_intervals', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  return { before: await arrangeCatalog(wf) };
});

describe('a live table with everything a production one carries, published by replace-intervals', () => {
  const wf = useFork(fixture);

  it('keeps every property through five publishes and a rollback, the restricted reader seeing only its rows after each', async () => {
    expect(PIPELINE.publishMode).toBe('replace-intervals');
    const { before } = fixture.arranged;
    const runs = [
      ...[5, 6, 7, 8, 9].map((day) => [day, inputFor(day)] as const),
      [8, { pipeline: PIPELINE.name, rollback: {} }] as const,
    ];
    for (const [day, input] of runs) {
      const result = await wf.run(input, `catalog-intervals-${day}-${'rollback' in input ? 'rollback' : 'publish'}`);
      expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
      await expectCatalogKept(wf, before, (await wf.expected(day)).rows);
    }
  });
});
