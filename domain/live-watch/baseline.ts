/** The baseline the out-of-band check compares the live table with at the swap (domain/live-watch/out-of-band.ts). */

/** The live table as Plan saw it, carried in the BatchRef to Publish (one per execution, so per batch attempt). */
export interface LiveBaseline {
  /** `name type` of every column, in table order (`amount numeric(12,2)`, `note character varying(256)`). */
  readonly columns: readonly string[];
  /** Rows Plan counted (those before `carryFrom` when set). */
  readonly rows: number;
  /** Sum over those rows of each row's hash over every column (domain/live-watch/sql/out-of-band.ts liveFingerprintQuery). */
  readonly checksum: string;
  /**
   * The row hash the checksum was taken with: `fnv` (domain/sql/row-hash.ts)
   * since Plan records it; absent in a baseline Plan recorded before, which
   * took the MD5 digest, so the swap recomputes with that one.
   */
  readonly rowHash?: RowHash;
  /**
   * Set when the pipeline declares expected writers (`outOfBand.expectedWriters`):
   * the batch's `to`. Rows at or after it are not fingerprinted; the swap
   * carries them over into the new table.
   */
  readonly carryFrom?: string;
}

/** How a live fingerprint hashes each row: FNV_HASH over the binary values, or (baselines recorded before it) MD5 over their text. */
export type RowHash = 'fnv' | 'md5';
