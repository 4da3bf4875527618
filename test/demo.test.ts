// The main job (`npm start`) at a small scale, so CI runs the same scenario
// a newcomer runs: both days, both paths, readers polling throughout. The
// demo itself fails (exit 1) if a reader of the atomic path saw a mix.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT, STATE_DIR } from '../lib/project.ts';
import { SAFETY_NET_MS } from './support/safety-net.ts';

describe('npm start (the demo)', () => {
  it('shows naive readers a half-built table and atomic readers only the old or the new one, resumes the failed batch after the fix, then prints the manifest', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'local', 'demo.ts')], {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        DEMO_ROWS_PER_DAY: '200',
        ATOMIC_PUBLISH_PG_DIR: join(STATE_DIR, 'demo-test-pg'),
      },
      encoding: 'utf8',
      timeout: SAFETY_NET_MS,
    });
    expect(run.status, run.stderr).toBe(0);
    const out = run.stdout;

    const row = (day: string, path: string) => {
      const line = out.split('\n').find((l) => l.startsWith(`│ ${day} `) && l.includes(path));
      expect(line, `${day} ${path} row`).toBeDefined();
      return line!
        .split('│')
        .map((cell) => cell.trim())
        .filter(Boolean);
    };
    // Monday: old 86 days, new 90 days of 200 rows. Naive readers saw an empty-then-growing table.
    const mondayNaive = row('Monday', 'naive in place');
    expect(mondayNaive.slice(2, 6)).not.toContain('17,200');
    expect(mondayNaive[5]).toBe('18,000');
    expect(row('Monday', 'atomic-publish').slice(2, 6)).toEqual(['17,200', '17,200', '17,200', '18,000']);
    // Tuesday: the bad row fails both paths; naive readers are left with a partial table, atomic ones with Monday's.
    const tuesdayNaive = row('Tuesday      ', 'naive in place');
    expect(tuesdayNaive[6]).toContain('division by zero');
    expect(Number(tuesdayNaive[5]!.replace(/,/g, ''))).toBeLessThan(18_000);
    expect(row('Tuesday      ', 'atomic-publish').slice(2, 6)).toEqual(['18,000', '18,000', '18,000', '18,000']);
    // The re-run after the fix: 91 days, the failed batch resumed.
    expect(row('Tuesday re-run', 'atomic-publish').slice(2, 7)).toEqual(['18,000', '18,000', '18,000', '18,200', 'succeeded']);

    expect(out).toMatch(/^Monday atomic readers: \d+ reads, distinct counts 17,200, 18,000 /m);
    expect(out).toMatch(/^Tuesday atomic readers: \d+ reads, distinct counts 18,000 /m);
    expect(out).toMatch(/^Tuesday re-run atomic readers: \d+ reads, distinct counts 18,000, 18,200 /m);
    expect(out).toContain('Subject: atomic-publish: sales_order_lines failed (WarehouseError)');
    expect(out).toMatch(/Plan: batch [0-9a-f]{16}, 91 chunks, (\d+) already loaded by an earlier attempt, \d+ to load; \d+ step\(s\) retried/);
    // The manifest: both batches published, the Tuesday batch on its second attempt after a failed first.
    expect(out).toMatch(/│ [0-9a-f]{16} │ PUBLISHED │ +2 │ 2026-01-01 \.\. 2026-04-02 │/);
    expect(out).toMatch(/│ [0-9a-f]{16} │ +1 │ FAILED +│ demo-tuesday-\d+ +│ +[\d.]+ │ ERROR: division by zero/);
    // Thursday: 100 order lines of 2026-03-31 corrected in place after the chunks loaded; the gate fails and locates them, the re-run publishes.
    expect(row('Thursday       ', 'atomic-publish')[6]).toContain('CheckFailedError');
    expect(row('Thursday re-run', 'atomic-publish')[6]).toBe('succeeded');
    expect(out).toMatch(/│ +\d+ │ 2026-03-31 │ +(\d+) │ +\1 │ +[\d.]+ │ +[\d.]+ │ +100000\.00 │ differs +│/);
    expect(out).toContain('on both sides, rows differ: 100 (first keys: (order_id, line_no) = (');
    expect(out).toMatch(
      /^Thursday: the gate located the correction \(check_results, difference_located\): #\d+ 2026-03-31: .*source - staging 100000\.00; checksum differs$/m,
    );
    // Each publication's event for downstream jobs, under its own id.
    expect(out).toMatch(/^  Publication Published: \{"eventId":"sales_order_lines:1","pipeline":"sales_order_lines",/m);
    expect(out).toMatch(/^  Publication Published: \{"eventId":"sales_order_lines:2",/m);
    expect(out).toContain('OK: readers of the atomic path only ever saw the old or the new table.');
  });
});
