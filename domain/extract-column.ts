/**
 * The column that places a row in a chunk and in a batch's interval: the
 * source's modification time when the spec names one (`modifiedColumn`),
 * else the time column. The load, Reconcile, chunk sizing and the sort-key
 * check all use it; the time column stays the event time that is stored.
 */
export function extractColumn(pipeline: { readonly timeColumn: string; readonly modifiedColumn?: string }): string {
  return pipeline.modifiedColumn ?? pipeline.timeColumn;
}
