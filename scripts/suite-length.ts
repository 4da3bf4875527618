/**
 * The suite's measured length, as `npm run test:loaded` records it in
 * docs/results.md (local/results-file.ts): one line per load (idle, or under N busy loops), each with its
 * runs' outcome, their range in seconds, the day and the machine. A set of
 * runs replaces the line of its own load and keeps the others. Nobody
 * writes these figures by hand.
 */
import { sectionBegin, sectionEnd } from '../local/results-file.ts';

export const BEGIN = sectionBegin('suite-length', 'npm run test:loaded');
export const END = sectionEnd('suite-length');

export interface SuiteRuns {
  /** Busy loops that ran beside the suite: 0 is an otherwise idle machine. */
  readonly busy: number;
  readonly seconds: readonly number[];
  readonly green: number;
  /** YYYY-MM-DD. */
  readonly day: string;
  readonly machine: string;
}

function loadOf(busy: number): string {
  return busy === 0 ? 'with the cores otherwise idle' : `under ${busy} busy loop${busy === 1 ? '' : 's'}`;
}

/** The line of one set of runs. */
export function suiteLine(runs: SuiteRuns): string {
  const low = Math.round(Math.min(...runs.seconds));
  const high = Math.round(Math.max(...runs.seconds));
  const range = low === high ? `${low} s` : `${low} to ${high} s`;
  const n = runs.seconds.length;
  return `- \`npm test\` ${loadOf(runs.busy)}: ${range}, ${runs.green} of ${n} run${n === 1 ? '' : 's'} green (${runs.day}; ${runs.machine})`;
}

/** `text` with the block's line for `runs`' load replaced (or added), the block created at its end if missing. */
export function recordSuiteRuns(text: string, runs: SuiteRuns): string {
  const line = suiteLine(runs);
  const key = `- \`npm test\` ${loadOf(runs.busy)}:`;
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) return `${text.replace(/\n*$/, '\n\n')}${BEGIN}\n${line}\n${END}\n`;
  const inside = text
    .slice(begin + BEGIN.length, end)
    .split('\n')
    .filter((l) => l.startsWith('- ') && !l.startsWith(key));
  // Idle first, then by load.
  const lines = [...inside, line].sort((a, b) => busyOf(a) - busyOf(b));
  return `${text.slice(0, begin)}${BEGIN}\n${lines.join('\n')}\n${text.slice(end)}`;
}

function busyOf(line: string): number {
  const match = /under (\d+) busy/.exec(line);
  return match ? Number(match[1]) : 0;
}
