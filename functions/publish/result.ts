// What Publish, PublishGroup and Rollback answer for a publication: the
// output EmitMetrics and Cleanup read. Apart from the handlers, which
// import it, so that no handler file is imported by another.
import type { Row } from '../commons/warehouse.ts';

/** What a publish step answers: the publication live now, or why nothing was published. */
export interface PublishResult {
  readonly publication: number;
  readonly publishedAt: string;
  readonly liveTable: string;
  readonly oldVersionTable: string;
  readonly rowsPublished: number;
  /** True when an earlier attempt had already published (a retry after a lost response). */
  readonly alreadyPublished: boolean;
  /**
   * The pipeline already publishes newer data than this batch holds: nothing
   * was published, the batch is SUPERSEDED, and the execution ends there
   * (state Superseded) without a page. `reason` is the guard's refusal.
   */
  readonly superseded: boolean;
  readonly reason?: string;
  /**
   * A restatement whose staging equals the live rows it would replace:
   * nothing was published; the batch ends SUPERSEDED (the live rows already
   * hold its data) and `superseded` is true too, so the execution ends in
   * state Superseded, without a page.
   */
  readonly unchanged?: boolean;
  /** A rollback's answer: the publication it undid (the event says `Publication Rolled Back`). */
  readonly rollbackOf?: number;
}

/** A publications row (joined to its batch, or a rollback's own) as the step's answer. */
export function toResult(row: Row, liveTable: string, alreadyPublished: boolean): PublishResult {
  return {
    publication: Number(row.seq),
    publishedAt: String(row.published_at),
    liveTable,
    oldVersionTable: String(row.old_version_table),
    rowsPublished: Number(row.rows_published ?? 0),
    alreadyPublished,
    superseded: false,
    ...(row.rollback_of === null || row.rollback_of === undefined ? {} : { rollbackOf: Number(row.rollback_of) }),
  };
}
