// The live table of test/support/real-catalog.ts as a member of a publish
// group (test/support/group-pipelines.ts): each group publish swaps both
// members in one transaction, and every property of the wide, fully
// catalogued member stays as it was, its restricted reader sees only its
// rows and every run SUCCEEDS.
import '../support/wide-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { sampleDay } from '../../local/sample-data.ts';
import { createMirror, GROUP, MIRROR_LIVE } from '../support/group-pipelines.ts';
import { arrangeCatalog, expectCatalogKept } from '../support/real-catalog.ts';
import { caughtMessage, useFork, useWorkflowFixture } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_catalog_group', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  await wf.withClient(createMirror);
  return { before: await arrangeCatalog(wf) };
});

describe('a live table with everything a production one carries, published in a group', () => {
  const wf = useFork(fixture);

  it('keeps every property through three group publishes, the restricted reader seeing only its rows after each', async () => {
    const { before } = fixture.arranged;
    for (const day of [6, 7, 8]) {
      const result = await wf.run({ group: GROUP, to: sampleDay(day).toISOString() }, `catalog-group-${day}`);
      expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
      await expectCatalogKept(wf, before, (await wf.expected(day)).rows);
      expect((await wf.fingerprint(MIRROR_LIVE)).rows).toBe((await wf.expected(day)).rows);
    }
  });
});
