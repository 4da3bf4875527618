// The README's first screen is a newcomer's whole local path: `local up`,
// the sample it creates, and the commands in the order they are used, with
// dates inside the sample. The figures are read from the code (`local up`'s
// options, the sample's start), so a change to either that the README does
// not follow fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { program } from '../../cli/main.ts';
import { PROJECT_ROOT } from '../../lib/project.ts';
import { SAMPLE_HISTORY_START, sampleDay } from '../../local/sample-data.ts';

const README = readFileSync(`${PROJECT_ROOT}/README.md`, 'utf8');
const LINES = README.split('\n');
/** The README's prose with every run of white space one space: line breaks fall anywhere. */
const FLAT = README.replace(/\s+/g, ' ');
/** A screen of a browser or a terminal, about. */
const FIRST_SCREEN_LINES = 60;
const NEWCOMER_ORDER = ['plan', 'run', 'status', 'history', 'backfill', 'check', 'rollback'];

const day = (d: Date) => d.toISOString().slice(0, 10);

function localUpDefaults(): Record<string, string> {
  const cli = program({ stdout: () => {}, stderr: () => {}, env: {} }, { code: 0 });
  const up = cli.commands.find((c) => c.name() === 'local')?.commands.find((c) => c.name() === 'up');
  expect(up, 'atomic-publish local up').toBeDefined();
  return Object.fromEntries(up!.options.map((o) => [o.long!, String(o.defaultValue)]));
}

/** The sh blocks of the "Try it locally" section, as lines. */
function tryItLocally(): string[][] {
  const start = LINES.indexOf('## Try it locally');
  const end = LINES.findIndex((l, i) => i > start && l.startsWith('## '));
  const section = LINES.slice(start, end < 0 ? undefined : end).join('\n');
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim().split('\n'));
}

describe('the README', () => {
  it('puts the local path on its first screen: the section, `local up`, and the commands after it', () => {
    const heading = LINES.indexOf('## Try it locally');
    expect(heading).toBeGreaterThan(0);
    expect(heading).toBeLessThan(FIRST_SCREEN_LINES);
    expect(LINES.findIndex((l) => l.includes('atomic-publish local up'))).toBeLessThan(FIRST_SCREEN_LINES);
  });

  it('states the sample local up creates by default: database, rows a day, days, and its date range', () => {
    const defaults = localUpDefaults();
    const days = Number(defaults['--sample-days']);
    expect(FLAT).toContain(`\`${defaults['--database']}\` (\`--database\`)`);
    expect(FLAT).toContain(`${defaults['--rows-per-day']} order lines a day (\`--rows-per-day\`)`);
    expect(FLAT).toContain(`${days} days (\`--sample-days\`) from ${day(SAMPLE_HISTORY_START)}`);
    expect(FLAT).toContain(`\`[${day(SAMPLE_HISTORY_START)}, ${day(sampleDay(days))})\``);
    // The live table as `local up` builds it: all but the sample's last 2 days (cli/local-up.ts).
    expect(FLAT).toContain(`all but the last 2 days (to ${day(sampleDay(days - 2))})`);
  });

  it('lists the commands in the order a newcomer uses them, every date inside the sample', () => {
    const days = Number(localUpDefaults()['--sample-days']);
    const [localUp, path] = tryItLocally();
    expect(localUp?.[0]).toMatch(/^npx atomic-publish local up\b/);
    const commands = path!.map((line) => /^npx atomic-publish (\S+)/.exec(line)?.[1]);
    expect(commands).toEqual(NEWCOMER_ORDER);
    const dates = path!.flatMap((line) => [...line.matchAll(/--(?:from|to) (\S+)/g)].map((m) => new Date(`${m[1]}T00:00:00Z`)));
    expect(dates.length).toBeGreaterThan(0);
    for (const date of dates) {
      expect(date.getTime(), day(date)).toBeGreaterThanOrEqual(SAMPLE_HISTORY_START.getTime());
      expect(date.getTime(), day(date)).toBeLessThanOrEqual(sampleDay(days).getTime());
    }
  });
});
