/**
 * The live watch: between runs, is the live table still what its latest
 * publication recorded (manifest version 11, domain/live-watch/sql/live-watch.ts)?
 * Pure: the freshness monitor (functions/freshness-monitor/live-watch.ts)
 * reads the facts and writes the LiveDrift metric.
 */
import { AtomicPublishError } from '../errors.ts';
import { columnChanges } from './out-of-band.ts';

/** What the latest publication recorded of the live table. */
export interface RecordedLive {
  readonly seq: number;
  /** `name type` texts, in order. */
  readonly columns: readonly string[];
  /** `<rows>:<checksum>`; undefined when the columns changed during the publish and nothing was fingerprinted. */
  readonly fingerprint: string | undefined;
  /** With expected writers: only rows before it were fingerprinted. */
  readonly rowsBefore: string | undefined;
}

/** The live table now: its columns, and its fingerprint when its columns are those recorded (else not taken). */
export interface LiveNow {
  readonly columns: readonly string[];
  readonly fingerprint?: string;
}

/** The outcome for one pipeline: compared (drifted or not, and what differs), or skipped and why. */
export type LiveWatchResult =
  | { readonly outcome: 'matches'; readonly seq: number }
  | { readonly outcome: 'drifted'; readonly seq: number; readonly differences: readonly string[] }
  | { readonly outcome: 'skipped'; readonly reason: string };

/**
 * What differs between the publication's record and the live table now,
 * in words without row values: columns added, dropped, retyped or moved;
 * rows then and now with their checksums. Empty when they match.
 */
export function liveDifferences(recorded: RecordedLive, now: LiveNow): string[] {
  if (recorded.columns.join(';') !== now.columns.join(';')) {
    const changes = columnChanges(recorded.columns, now.columns);
    return changes.length > 0 ? changes : ['column list differs'];
  }
  if (recorded.fingerprint === undefined) return ['the publication recorded no fingerprint: the columns changed while it published'];
  if (now.fingerprint === recorded.fingerprint) return [];
  const [rowsThen, sumThen] = recorded.fingerprint.split(':');
  const [rowsNow, sumNow] = (now.fingerprint ?? '').split(':');
  const scope = recorded.rowsBefore === undefined ? '' : ` (rows before ${recorded.rowsBefore}; later rows are expected writers')`;
  return [`rows: ${rowsThen} at publication ${recorded.seq}, ${rowsNow} now; checksum ${sumThen} then, ${sumNow} now${scope}`];
}

/**
 * The live watch measured some pipelines but not all: thrown after the
 * others' metrics were written, so the invocation counts as a Lambda error
 * (the monitor's Errors alarm pages). The message names every pipeline and why.
 */
export class LiveWatchError extends AtomicPublishError {
  override name = 'LiveWatchError';

  constructor(readonly failures: readonly { readonly pipeline: string; readonly error: string }[]) {
    super(`live table not watched for ${failures.length} pipeline(s): ${failures.map((f) => `${f.pipeline} (${f.error})`).join('; ')}`);
  }
}

/**
 * The input the live watch's schedule invokes the freshness monitor with
 * (lib/freshness-monitor.ts); any other input measures freshness.
 */
export const LIVE_WATCH_EVENT = { watch: 'live' } as const;

export function isLiveWatchEvent(event: unknown): boolean {
  return typeof event === 'object' && event !== null && (event as { watch?: unknown }).watch === LIVE_WATCH_EVENT.watch;
}
