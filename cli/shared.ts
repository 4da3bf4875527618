/** What every command shares: its I/O, tables, the manifest reads, the pipeline and interval checks (Plan's own). */
import Table from 'cli-table3';
import { manifestTablePresent } from '../domain/manifest/sql/manifest.ts';
import type { BatchInterval } from '../domain/plan/chunk.ts';
import { resolveInterval, resolvePipeline } from '../domain/plan/plan.ts';
import type { Pipeline } from '../domain/spec.ts';
import type { Statement } from '../domain/sql/statement.ts';
import type { Row } from '../functions/commons/warehouse.ts';
import { pipelines } from '../pipelines/index.ts';
import type { Context } from './context.ts';
import type { Interrupt } from './interrupt.ts';
import { fitColumns, outputWidth, wrap } from './layout.ts';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** Draw a progress bar (a terminal). */
  readonly tty?: boolean;
  /** The terminal's width, when stdout is one: human output keeps within it (cli/layout.ts outputWidth). */
  readonly columns?: number;
  /** Aborted by Ctrl-C (bin/atomic-publish.ts): `local up` stops, a command that follows an execution stops following. */
  readonly signal?: AbortSignal;
  /** Who handles that signal (cli/interrupt.ts); set by main from `signal`. */
  readonly interrupt?: Interrupt;
}

export const STATEMENT = (command: string) => `atomic-publish:cli:${command}`;

/** The width of human output for this terminal (cli/layout.ts). */
export const widthOf = (io: CliIo) => outputWidth(io.columns);

/**
 * `text` (sentences, not code) wrapped at the output's width, a `command`
 * kept on one line; a line of a drawn table (an alert's, domain/text-table.ts)
 * is left as it is.
 */
export const prose = (io: CliIo, text: string) =>
  text
    .split('\n')
    .map((line) => (/^\s*[┌│├└]/.test(line) ? line : wrap(line, widthOf(io))))
    .join('\n');

/** A table within the output's width: the widest columns wrap, down to their longest word (cli/layout.ts fitColumns). */
export function table(io: CliIo, head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map((c) => String(c)))];
  const widths = fitColumns(cells, widthOf(io));
  const [fittedHead, ...fitted] = cells.map((row) => row.map((cell, i) => wrap(cell, widths[i]!, { breakWords: true })));
  const t = new Table({ head: fittedHead!, colWidths: widths.map((w) => w + 2), style: { head: [], border: [], compact: true } });
  t.push(...fitted);
  return t.toString();
}

export const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
export const num = (value: unknown) => Number(value ?? 0);

export function pipelineNamed(name: string): Pipeline {
  return resolvePipeline({ pipeline: name }, pipelines);
}

export function intervalOf(pipeline: Pipeline, from: string | undefined, to: string | undefined): BatchInterval {
  return resolveInterval({ pipeline: pipeline.name, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) }, pipeline, new Date());
}

export async function query(ctx: Context, statement: Statement, what: string): Promise<Row[]> {
  return ctx.warehouse().query(statement, STATEMENT(what));
}

/** Whether the manifest exists (a warehouse no run has touched has none). Reaches the warehouse: unreachable fails here. */
export async function manifestPresent(ctx: Context): Promise<boolean> {
  const [row] = await query(ctx, manifestTablePresent('publications'), 'manifest');
  return num(row?.present) > 0;
}
