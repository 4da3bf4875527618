// The main job (`npm start`) at a small scale, so CI runs the same scenario
// a newcomer runs: both days, both paths, readers polling throughout. The
// demo itself fails (exit 1) if a reader of the atomic path saw a mix.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../local/runner.ts';

describe('npm start (the demo)', () => {
  it('shows naive readers a half-built table and atomic readers only the old or the new one, then prints the manifest', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'local', 'demo.ts')], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DEMO_ROWS_PER_DAY: '200', ATOMIC_PUBLISH_PG_DIR: join(PROJECT_ROOT, '.atomic-publish', 'demo-test-pg') },
      encoding: 'utf8',
      timeout: 150_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const out = run.stdout;

    const row = (day: string, path: string) => {
      const line = out.split('\n').find((l) => l.includes(day) && l.includes(path));
      expect(line, `${day} ${path} row`).toBeDefined();
      return line!.split('│').map((cell) => cell.trim()).filter(Boolean);
    };
    // Monday: old 86 days, new 90 days of 200 rows. Naive readers saw an empty-then-growing table.
    const mondayNaive = row('Monday', 'naive in place');
    expect(mondayNaive.slice(2, 6)).not.toContain('17,200');
    expect(mondayNaive[5]).toBe('18,000');
    expect(row('Monday', 'atomic-publish').slice(2, 6)).toEqual(['17,200', '17,200', '17,200', '18,000']);
    // Tuesday: the bad row fails both paths; naive readers are left with a partial table, atomic ones with Monday's.
    const tuesdayNaive = row('Tuesday', 'naive in place');
    expect(tuesdayNaive[6]).toContain('division by zero');
    expect(Number(tuesdayNaive[5]!.replace(/,/g, ''))).toBeLessThan(18_000);
    expect(row('Tuesday', 'atomic-publish').slice(2, 6)).toEqual(['18,000', '18,000', '18,000', '18,000']);

    expect(out).toMatch(/Monday atomic readers: \d+ reads, distinct counts 17,200, 18,000 /);
    expect(out).toMatch(/Tuesday atomic readers: \d+ reads, distinct counts 18,000 /);
    expect(out).toContain('Subject: atomic-publish: sales_order_lines failed (WarehouseError)');
    expect(out).toMatch(/│ PUBLISHED │/);
    expect(out).toMatch(/│ FAILED +│/);
    expect(out).toContain('OK: readers of the atomic path only ever saw the old or the new table.');
  }, 180_000);
});
