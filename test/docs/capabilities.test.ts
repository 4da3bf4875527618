// develop.md's "Finding a capability" table names real places: every path
// in a code span exists, and every end-to-end name is a test/workflow/ file
// (the links in it are checked with every other link by links.test.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/project.ts';

const DEVELOP = readFileSync(join(PROJECT_ROOT, 'docs/develop.md'), 'utf8');
const section = DEVELOP.slice(DEVELOP.indexOf('## Finding a capability'), DEVELOP.indexOf('## Tests'));
const rows = section
  .split('\n')
  .filter((line) => line.startsWith('| ') && !line.startsWith('| capability') && !line.startsWith('|---'))
  .map((line) => line.split('|').slice(1, -1));
const spans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

describe('the capability map in docs/develop.md', () => {
  it('has a row per capability', () => {
    expect(rows.length).toBeGreaterThan(10);
  });

  it('names files that exist and end-to-end tests that exist', () => {
    const missing: string[] = [];
    for (const row of rows) {
      for (const cell of row.slice(2, 5)) for (const path of spans(cell)) if (!existsSync(join(PROJECT_ROOT, path))) missing.push(path);
      for (const name of spans(row[5]!)) if (!existsSync(join(PROJECT_ROOT, 'test/workflow', `${name}.test.ts`))) missing.push(`test/workflow/${name}.test.ts`);
    }
    expect(missing).toEqual([]);
  });
});
