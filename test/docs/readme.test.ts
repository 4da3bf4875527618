// The README's first screen is a newcomer's whole local path: `local up`,
// the sample it creates, and the commands in the order they are used, with
// the sample's dates as `local up` exports them. The figures are read from
// the code (`local up`'s options, its sample), so a change to either that
// the README does not follow fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { program } from '../../cli/main.ts';
import { PROJECT_ROOT } from '../../lib/project.ts';
import { MIN_SAMPLE_DAYS, recentSample, SAMPLE_CORRECTED_DAYS, SAMPLE_UNPUBLISHED_DAYS, sampleEnvironment } from '../../local/recent-sample.ts';
import { pipelines } from '../../pipelines/index.ts';

const README = readFileSync(`${PROJECT_ROOT}/README.md`, 'utf8');
const LINES = README.split('\n');
/** The README's prose with every run of white space one space: line breaks fall anywhere. */
const FLAT = README.replace(/\s+/g, ' ');
/** A screen of a browser or a terminal, about. */
const FIRST_SCREEN_LINES = 60;
const NEWCOMER_ORDER = ['plan', 'run', 'run', 'status', 'history', 'backfill', 'check', 'rollback'];
const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth'];

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

  it('states the sample local up creates by default: database, rows a day, days, what live lacks, the corrected days', () => {
    const defaults = localUpDefaults();
    const days = Number(defaults['--sample-days']);
    expect(days).toBeGreaterThanOrEqual(MIN_SAMPLE_DAYS);
    expect(FLAT).toContain(`\`${defaults['--database']}\` (\`--database\`) with a sample that ends today`);
    expect(FLAT).toContain(`${defaults['--rows-per-day']} order lines a day (\`--rows-per-day\`) for the last ${days} days (\`--sample-days\`)`);
    expect(FLAT).toContain(`all but the last ${SAMPLE_UNPUBLISHED_DAYS} days`);
    const { from, days: corrected } = SAMPLE_CORRECTED_DAYS;
    expect(corrected).toBe(2);
    expect(FLAT).toContain(`the sample's ${ORDINALS[from]} and ${ORDINALS[from + 1]} days were corrected upstream`);
  });

  it('lists the commands in the order a newcomer uses them, on pipelines there are, with the variables local up exports', () => {
    const days = Number(localUpDefaults()['--sample-days']);
    const [localUp, path] = tryItLocally();
    expect(localUp?.[0]).toMatch(/^npx atomic-publish local up\b/);
    const commands = path!.map((line) => /^npx atomic-publish (\S+) ?(\w+)?/.exec(line));
    expect(commands.map((c) => c?.[1])).toEqual(NEWCOMER_ORDER);
    for (const c of commands) if (c?.[2]) expect(pipelines.map((p) => p.name)).toContain(c[2]);
    // The range backfill is of a pipeline that replaces intervals: it publishes those days and no other.
    const backfill = commands.find((c) => c?.[1] === 'backfill')!;
    expect(pipelines.find((p) => p.name === backfill[2])?.publishMode).toBe('replace-intervals');
    const variables = path!.flatMap((line) => [...line.matchAll(/\$\{?(\w+)/g)].map((m) => m[1]!));
    expect(variables.length).toBeGreaterThan(0);
    const exported = Object.keys(sampleEnvironment(recentSample(new Date(), days)));
    for (const name of variables) expect(exported, name).toContain(name);
    // No literal dates: the sample's days change with the day it was made.
    expect(path!.join('\n')).not.toMatch(/\d{4}-\d{2}-\d{2}/);
  });
});
