/**
 * Rollback: which retained version an execution input names, and where its
 * rows are. The manifest's publications go in, a target or a refusal comes
 * out, before anything is written. Plan (functions/plan/rollback.ts) and
 * the command line (cli/run.ts) both resolve a rollback with
 * resolveRollbackFrom, so the command line refuses, before starting
 * anything, every target Plan would refuse.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.ts';
import { tableColumns } from '../plan/sql/plan.ts';
import type { Pipeline } from '../spec.ts';
import type { Statement } from '../sql/statement.ts';
import { clip, echo } from '../text.ts';
import { warehouseTimeIso } from '../time.ts';
import { publicationHistory, rollbackBatch } from './sql/rollback.ts';

/** A batch id as batchIdFor makes it: 16 lowercase hex digits. */
export const BATCH_ID_PATTERN = /^[0-9a-f]{16}$/;

/** `{"pipeline": "x", "rollback": {}}` or `{"pipeline": "x", "rollback": {"to": "<batch id>"}}`. */
export interface RollbackInput {
  readonly pipeline: string;
  /** The batch whose version goes live again; absent: the version live before the latest publication. */
  readonly to?: string;
}

const rollbackInput = z.strictObject(
  {
    pipeline: z.string(),
    rollback: z.strictObject(
      {
        to: z
          .string({ error: (issue) => `must be a batch id (16 hexadecimal digits, as atomic_publish.publications.batch_id shows), got ${echo(issue.input)}` })
          .regex(BATCH_ID_PATTERN, {
            error: (issue) => `must be a batch id (16 hexadecimal digits, as atomic_publish.publications.batch_id shows), got ${echo(issue.input)}`,
          })
          .optional(),
      },
      { error: (issue) => (issue.code === 'unrecognized_keys' ? undefined : `must be an object: {} or {"to": "<batch id>"}, got ${echo(issue.input)}`) },
    ),
  },
  { error: () => undefined },
);

/** Whether an execution input asks for a rollback (it has a `rollback` field). */
export function isRollbackInput(input: unknown): boolean {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'rollback' in input;
}

/**
 * The rollback an input asks for. A rollback takes no interval: `from`,
 * `to` (of a run) or any other field beside `pipeline` and `rollback` is
 * refused, as is a `rollback.to` that is not a batch id.
 */
export function parseRollbackInput(input: unknown): RollbackInput {
  const parsed = rollbackInput.safeParse(input);
  if (parsed.success) return { pipeline: parsed.data.pipeline, ...(parsed.data.rollback.to === undefined ? {} : { to: parsed.data.rollback.to }) };
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length === 0 ? 'input' : `input.${issue.path.join('.')}`;
    const allowed = issue.path.length === 0 ? 'pipeline, rollback (a rollback takes no interval: from and to belong to a run)' : 'to';
    throw new ValidationError(`${where} has unknown field(s): ${clip(issue.keys.join(', '))} (allowed: ${allowed})`);
  }
  throw new ValidationError(`input.${issue.path.join('.')} ${issue.message}`);
}

/** A row of `atomic_publish.publications` as the rollback reads it (domain/rollback/sql/rollback.ts publicationHistory). */
export interface PublicationRecord {
  readonly seq: number;
  /** The batch live after this publication. */
  readonly batchId: string;
  readonly publishedAt: string;
  /** `schema.table`: where the version live before this publication went. */
  readonly oldVersionTable: string;
  /** Cleanup dropped the old version. */
  readonly dropped: boolean;
  /** A rollback renamed the old version back to live: it is no longer at `oldVersionTable`. */
  readonly restored: boolean;
  /** For a rollback: the publication it rolled back. */
  readonly rollbackOf?: number;
  /** How it published (manifest version 9; absent before): `swap`, `replace-intervals`, `merge`. */
  readonly mode?: string;
  /** The interval it wrote, ISO instants (manifest version 9). */
  readonly interval?: { readonly from: string; readonly to: string };
}

/** A row of publicationHistory as a PublicationRecord. */
export function publicationRecord(row: Readonly<Record<string, unknown>>): PublicationRecord {
  return {
    seq: Number(row.seq),
    batchId: String(row.batch_id),
    publishedAt: String(row.published_at),
    oldVersionTable: String(row.old_version_table),
    dropped: Number(row.dropped) === 1,
    restored: Number(row.restored) === 1,
    ...(row.rollback_of === null || row.rollback_of === undefined ? {} : { rollbackOf: Number(row.rollback_of) }),
    ...(row.publish_mode === null || row.publish_mode === undefined ? {} : { mode: String(row.publish_mode) }),
    ...(row.interval_start === null || row.interval_start === undefined
      ? {}
      : { interval: { from: warehouseTimeIso(row.interval_start), to: warehouseTimeIso(row.interval_end) } }),
  };
}

/**
 * Whether a publication is the rollback of a publication of some intervals
 * (domain/rollback/sql/rollback.ts restoreIntervals). Its batch is the one it took
 * away, not one it put back (the rows it put back are those the
 * publication replaced, of no one batch): the batch live newest is then
 * that of the newest publication in effect, not a rollback and not rolled
 * back. A whole-table rollback records the batch it put back, which is live.
 */
export function isIntervalRollback(publication: { readonly rollbackOf?: number | null; readonly mode?: string | null }): boolean {
  return publication.rollbackOf !== undefined && publication.rollbackOf !== null && publication.mode === 'replace-intervals';
}

/** What a rollback swaps in, and where the live version goes. */
export interface RollbackTarget {
  /** The batch whose rows go live again. */
  readonly batchId: string;
  /** The publication whose old version is restored (its `old_version_table`). */
  readonly restoreSeq: number;
  /** The restored table, without its schema. */
  readonly restoreTable: string;
  /** The latest publication: the one rolled back. The swap refuses if another came since. */
  readonly rolledBackSeq: number;
  /** The batch live now, rolled away from. */
  readonly fromBatchId: string;
  /** The name the live table takes: retained, so the rollback can itself be undone. */
  readonly retainedTable: string;
  /**
   * Present when the publication rolled back replaced some intervals
   * (replace-intervals): instead of a swap, the live rows of this interval
   * are replaced by `restoreTable`, the rows that publication replaced,
   * and kept in `retainedTable`.
   */
  readonly interval?: { readonly from: string; readonly to: string };
  /** With `interval`, when the publication undone is itself such a rollback: the publication whose rows go live again. */
  readonly reinstates?: number;
}

/** A rollback to the batch that is live already: nothing to do. */
export interface AlreadyLive {
  readonly alreadyLive: true;
  readonly batchId: string;
}

/** The refusal of a rollback of a pipeline with no publication. */
export function neverPublished(pipeline: Pipeline): ValidationError {
  return new ValidationError(`pipeline ${pipeline.name} has never published: there is nothing to roll back`);
}

/** Refuses a rollback of a pipeline that publishes through a view: the rollback operation swaps tables. */
export function assertRollbackable(pipeline: Pipeline): void {
  if (pipeline.publishVia !== 'view') return;
  throw new ValidationError(
    `pipeline ${pipeline.name} publishes through a view, and the rollback operation swaps tables; roll it back by hand, as its functions' database user: ` +
      `CREATE OR REPLACE VIEW ${pipeline.target.schema}.${pipeline.target.table} AS SELECT <its columns> FROM <the old_version_table of its latest row in atomic_publish.publications>. Nothing was written`,
  );
}

/**
 * Name of the live table's version when a rollback replaces it: the batch it
 * holds, so the name is free (the one table holding a batch's rows is live
 * when a rollback takes it away) and as short as Publish's `__prev_` names.
 */
export function rolledBackVersionTableFor(pipeline: Pipeline, batchId: string): string {
  return `${pipeline.target.table}__rb_${batchId}`;
}

/** Where the live rows an interval rollback replaces are kept: one name per publication rolled back. */
export function replacedRowsTableFor(pipeline: Pipeline, rolledBackSeq: number): string {
  return `${pipeline.target.table}__rbs_${rolledBackSeq}`;
}

/**
 * The rollback of a pipeline whose latest publication replaced some
 * intervals: only that publication can be undone (`{}`), by putting back
 * the rows it replaced, which its old version holds; a second `{}` undoes
 * the first. A publication of a merge, or one from before manifest version
 * 9 (no interval recorded), cannot be; nor can a rollback `to` a batch.
 */
export function resolveIntervalRollback(pipeline: Pipeline, to: string | undefined, history: readonly PublicationRecord[]): RollbackTarget {
  const latest = [...history].sort((a, b) => a.seq - b.seq).at(-1);
  if (!latest) throw neverPublished(pipeline);
  if (to !== undefined) {
    throw new ValidationError(
      `pipeline ${pipeline.name}'s latest publication (${latest.seq}) replaced some intervals: it is rolled back one publication at a time, newest first, with {"pipeline": "${pipeline.name}", "rollback": {}}; input.rollback.to, a batch to go back to, applies to whole-table versions only. Nothing was written`,
    );
  }
  if (latest.mode !== 'replace-intervals' || latest.interval === undefined) {
    throw new ValidationError(
      `pipeline ${pipeline.name}'s latest publication (${latest.seq}) ${latest.mode === undefined ? 'records no interval (published before manifest version 9)' : `was published by ${latest.mode}`}: ` +
        `its old version holds only the rows it replaced, and which rows it wrote is not recorded, so it cannot be undone as a whole. ` +
        `Run the interval again from the source (input from/to), or restore the rows by hand from ${latest.oldVersionTable}. Nothing was written`,
    );
  }
  if (latest.dropped || latest.restored) {
    throw new ValidationError(
      `the rows publication ${latest.seq} of ${pipeline.name} replaced are no longer retained (${latest.dropped ? `dropped by Cleanup past retention.keepVersions ${pipeline.retention.keepVersions}` : 'already put back'}): ` +
        `run the interval ${latest.interval.from} to ${latest.interval.to} again from the source instead. Nothing was written`,
    );
  }
  return {
    batchId: latest.batchId,
    restoreSeq: latest.seq,
    restoreTable: bareName(pipeline, latest.oldVersionTable),
    rolledBackSeq: latest.seq,
    fromBatchId: latest.batchId,
    retainedTable: replacedRowsTableFor(pipeline, latest.seq),
    interval: latest.interval,
    ...(latest.rollbackOf === undefined ? {} : { reinstates: latest.rollbackOf }),
  };
}

/** The bare table name of a `schema.table` the manifest records. */
function bareName(pipeline: Pipeline, qualified: string): string {
  const prefix = `${pipeline.target.schema}.`;
  return qualified.startsWith(prefix) ? qualified.slice(prefix.length) : qualified;
}

/** Versions a rollback can reach now, newest first: the batch each holds, and the publication whose old version it is. */
export function retainedVersions(history: readonly PublicationRecord[]): { batchId: string; seq: number; replacedAt: string }[] {
  const bySeq = new Map(history.map((p) => [p.seq, p]));
  return [...history]
    .sort((a, b) => b.seq - a.seq)
    .flatMap((p) => {
      const held = bySeq.get(p.seq - 1);
      return held && !p.dropped && !p.restored ? [{ batchId: held.batchId, seq: p.seq, replacedAt: p.publishedAt }] : [];
    });
}

function howToRollBack(pipeline: Pipeline, history: readonly PublicationRecord[]): string {
  const retained = retainedVersions(history);
  if (retained.length === 0)
    return `no earlier version of ${pipeline.name} is retained (retention.keepVersions ${pipeline.retention.keepVersions}): nothing can be rolled back to`;
  const list = retained.map((v) => `${v.batchId} (replaced by publication ${v.seq} at ${v.replacedAt})`).join(', ');
  const example = JSON.stringify({ pipeline: pipeline.name, rollback: { to: retained[0]!.batchId } });
  return `the versions still retained hold batches ${list}: roll back to one with ${example}`;
}

/**
 * Where the rows of the batch a rollback names are, from the publications:
 * publication `s` moved the version live before it (batch of `s - 1`) to
 * its `old_version_table`, unless Cleanup dropped it or a rollback made it
 * live again since. `batchStatus` is the batch's status in
 * `atomic_publish.batches` (undefined: no such batch of this pipeline),
 * for the refusal's words. Returns AlreadyLive when the batch is live now.
 */
export function resolveRollback(
  pipeline: Pipeline,
  to: string | undefined,
  history: readonly PublicationRecord[],
  batchStatus: string | undefined,
): RollbackTarget | AlreadyLive {
  const sorted = [...history].sort((a, b) => a.seq - b.seq);
  const latest = sorted.at(-1);
  if (!latest) throw neverPublished(pipeline);
  const bySeq = new Map(sorted.map((p) => [p.seq, p]));
  const target = (source: PublicationRecord, batchId: string): RollbackTarget => ({
    batchId,
    restoreSeq: source.seq,
    restoreTable: bareName(pipeline, source.oldVersionTable),
    rolledBackSeq: latest.seq,
    fromBatchId: latest.batchId,
    retainedTable: rolledBackVersionTableFor(pipeline, latest.batchId),
  });

  if (to === undefined) {
    const held = bySeq.get(latest.seq - 1);
    if (!held) {
      throw new ValidationError(
        `the version of ${pipeline.name} live before its latest publication (${latest.seq}) is the table live before atomic-publish first published it, which no batch made: ` +
          `a rollback restores only versions atomic-publish published. ${howToRollBack(pipeline, sorted)}`,
      );
    }
    if (latest.dropped || latest.restored) {
      throw new ValidationError(
        `the version of ${pipeline.name} live before its latest publication (batch ${held.batchId}) is no longer retained (dropped by Cleanup past retention.keepVersions ${pipeline.retention.keepVersions}); ${howToRollBack(pipeline, sorted)}`,
      );
    }
    return target(latest, held.batchId);
  }

  if (latest.batchId === to) return { alreadyLive: true, batchId: to };
  const holders = sorted.filter((p) => bySeq.get(p.seq - 1)?.batchId === to);
  const source = holders.find((p) => !p.dropped && !p.restored);
  if (source) return target(source, to);
  if (holders.length > 0) {
    throw new ValidationError(
      `batch ${to} of ${pipeline.name} is past retention: its version was dropped by Cleanup (retention.keepVersions ${pipeline.retention.keepVersions}). ` +
        `To publish its data again, run its interval as a new run. Otherwise, ${howToRollBack(pipeline, sorted)}`,
    );
  }
  if (batchStatus === undefined) {
    throw new ValidationError(`batch ${to} is not a batch of pipeline ${pipeline.name} (atomic_publish.batches has none); ${howToRollBack(pipeline, sorted)}`);
  }
  throw new ValidationError(
    `batch ${to} of ${pipeline.name} was never published (it is ${batchStatus}): there is no version of it to roll back to; ${howToRollBack(pipeline, sorted)}`,
  );
}

/** Reads one statement of the manifest or the catalog (the handler's warehouse, or the command line's); `step` names it. */
export type ReadRows = (statement: Statement, step: string) => Promise<readonly Readonly<Record<string, unknown>>[]>;

/**
 * Resolves a rollback `to` a batch (or of the latest publication) against the
 * manifest and catalog as they are: a publication of some intervals is undone by
 * putting back the rows it replaced (resolveIntervalRollback), a whole-table one by
 * a swap (resolveRollback). Refused: no publication, a batch unknown or never
 * published, a version past retention or gone, a batch named after a publication
 * of some intervals. Why: docs/decisions/rollback.md
 */
export async function resolveRollbackFrom(
  read: ReadRows,
  pipeline: Pipeline,
  to: string | undefined,
): Promise<{ history: PublicationRecord[]; resolved: RollbackTarget | AlreadyLive }> {
  const history = (await read(publicationHistory(pipeline.name), 'history')).map(publicationRecord);
  const named = to === undefined ? undefined : (await read(rollbackBatch(pipeline.name, to), 'batch'))[0];
  const latestMode = history.at(-1)?.mode;
  const resolved =
    latestMode === undefined || latestMode === 'swap'
      ? resolveRollback(pipeline, to, history, named === undefined ? undefined : String(named.status))
      : resolveIntervalRollback(pipeline, to, history);
  if ('alreadyLive' in resolved) return { history, resolved };
  const { schema } = pipeline.target;
  if ((await read(tableColumns(schema, resolved.restoreTable), 'restore-columns')).length === 0) {
    throw new ValidationError(
      `the manifest says the rows of batch ${resolved.batchId} are in ${schema}.${resolved.restoreTable} (the old version of publication ${resolved.restoreSeq}), ` +
        `but that table does not exist: it was dropped or renamed outside atomic-publish. Roll back to another retained version, or run the batch's interval as a new run`,
    );
  }
  return { history, resolved };
}
