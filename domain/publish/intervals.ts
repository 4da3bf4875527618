/** Which publication last wrote each stretch of a table (manifest version 9: publications record their interval). */

/** A publication as intervalWriters lists it. */
export interface IntervalWrite {
  readonly seq: number;
  readonly mode: string;
  /** ISO 8601 instants: the interval `[start, end)` the publication wrote. */
  readonly start: string;
  readonly end: string;
}

/** A stretch `[start, end)` of the table and the publication whose rows it holds. */
export interface IntervalSource {
  readonly start: string;
  readonly end: string;
  readonly seq: number;
  readonly mode: string;
}

/**
 * The stretches of the table, in time order, each with the newest
 * publication that wrote it: a later publication covering an instant
 * replaced what an earlier one wrote there (a swap replaced everything up
 * to its end). Instants no publication wrote are left out. Adjacent
 * stretches of one publication are one.
 */
export function intervalSources(writes: readonly IntervalWrite[]): IntervalSource[] {
  const instants = [...new Set(writes.flatMap((w) => [Date.parse(w.start), Date.parse(w.end)]))].sort((a, b) => a - b);
  const newestFirst = [...writes].sort((a, b) => b.seq - a.seq);
  const sources: IntervalSource[] = [];
  for (let i = 0; i + 1 < instants.length; i += 1) {
    const [from, to] = [instants[i]!, instants[i + 1]!];
    const writer = newestFirst.find((w) => Date.parse(w.start) <= from && Date.parse(w.end) >= to);
    if (writer === undefined) continue;
    const last = sources.at(-1);
    if (last !== undefined && last.seq === writer.seq && Date.parse(last.end) === from) {
      sources[sources.length - 1] = { ...last, end: new Date(to).toISOString() };
    } else {
      sources.push({ start: new Date(from).toISOString(), end: new Date(to).toISOString(), seq: writer.seq, mode: writer.mode });
    }
  }
  return sources;
}
