/**
 * docs/results.md: the figures the commands measure, each section written
 * by its command between markers, never by hand (the docs link to it
 * rather than restate a figure). A section is replaced whole; the others
 * are kept.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../lib/project.ts';

export const RESULTS_FILE = join(PROJECT_ROOT, 'docs', 'results.md');

const HEADER =
  '# Measured results\n\nWritten by the commands that measure them, each section by its own; edits are lost. ' +
  'The docs link here instead of restating a figure.\n';

export const sectionBegin = (name: string, command: string) => `<!-- ${name}: written by \`${command}\`; edits are lost -->`;
export const sectionEnd = (name: string) => `<!-- /${name} -->`;

/** `text` with section `name` holding `body` (added at the end when missing). */
export function withSection(text: string, name: string, command: string, body: string): string {
  const begin = sectionBegin(name, command);
  const end = sectionEnd(name);
  const block = `${begin}\n${body.replace(/\n*$/, '\n')}${end}`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from) return `${(text.trim() === '' ? HEADER : text).replace(/\n*$/, '\n\n')}${block}\n`;
  return `${text.slice(0, from)}${block}${text.slice(to + end.length)}`;
}

/** The results file as it is now (its header alone when missing). */
export function readResults(): string {
  try {
    return readFileSync(RESULTS_FILE, 'utf8');
  } catch {
    return HEADER;
  }
}

/** Writes section `name` of the results file. */
export function writeResultsSection(name: string, command: string, body: string): void {
  writeFileSync(RESULTS_FILE, withSection(readResults(), name, command, body));
}

/** This machine, as a reader compares it with theirs. */
export function thisMachine(): string {
  const model = cpus()[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
  return `${availableParallelism()} cores (${model}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}
