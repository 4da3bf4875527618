/**
 * The width of what the command line prints for people: tables fitted to
 * it and sentences wrapped at it, never wider than a terminal that is
 * narrower (docs/decisions/output-width.md). JSON is never wrapped.
 */

/** The widest human output, in columns. */
export const MAX_WIDTH = 120;

/** Narrower than this, a terminal's width is not believed (a pipe that says 0, a tiny pane): MAX_WIDTH's share still applies. */
const MIN_WIDTH = 40;

/** The width to print in: the terminal's (`columns`, when stdout is one) when narrower than MAX_WIDTH. */
export function outputWidth(columns: number | undefined): number {
  return columns !== undefined && columns >= MIN_WIDTH && columns < MAX_WIDTH ? columns : MAX_WIDTH;
}

/** A line's words and the spaces before each; a `backquoted` span (a command to paste) is part of its word, spaces and all. */
function words(line: string): { space: string; word: string }[] {
  const out: { space: string; word: string }[] = [];
  let i = 0;
  while (i < line.length) {
    const start = i;
    while (i < line.length && line[i] === ' ') i += 1;
    const space = line.slice(start, i);
    const wordStart = i;
    while (i < line.length && line[i] !== ' ') {
      const close = line[i] === '`' ? line.indexOf('`', i + 1) : -1;
      i = close === -1 ? i + 1 : close + 1;
    }
    if (i > wordStart) out.push({ space, word: line.slice(wordStart, i) });
  }
  return out;
}

/**
 * `text` with every line longer than `width` broken at spaces (its
 * indentation repeated on the lines it continues on). A word longer than
 * the width stays whole on a line of its own, or, with `breakWords`, is cut
 * into pieces of the width: nothing is ever left out.
 */
export function wrap(text: string, width: number, options: { breakWords?: boolean } = {}): string {
  return text
    .split('\n')
    .flatMap((line) => {
      if (line.length <= width) return [line];
      const indent = /^ */.exec(line)![0];
      const room = Math.max(1, width - indent.length);
      const lines: string[] = [];
      let current = '';
      for (const { space, word } of words(line)) {
        const pieces = options.breakWords && word.length > room ? (word.match(new RegExp(`.{1,${room}}`, 'gs')) ?? [word]) : [word];
        pieces.forEach((piece, k) => {
          if (current !== '' && k === 0 && current.length + space.length + piece.length <= width) {
            current += space + piece;
            return;
          }
          if (current !== '') lines.push(current);
          current = indent + piece;
        });
      }
      if (current !== '') lines.push(current);
      return lines;
    })
    .join('\n');
}

const longest = (values: readonly string[]) => Math.max(0, ...values.map((v) => v.length));

/**
 * The content widths of a table's columns (`cells`: the header row first)
 * for the table to fit in `width`, with a border of one column and a space
 * on either side of each cell. The widest column gives way first, to the
 * width its cells take when wrapped narrower (so no room is left unused),
 * down to its longest word; only when every column is down to that are
 * words cut.
 */
export function fitColumns(cells: readonly (readonly string[])[], width: number): number[] {
  const columns = cells[0]?.length ?? 0;
  const column = (i: number) => cells.map((row) => row[i] ?? '');
  const taken = (i: number, w: number, breakWords: boolean) => longest(column(i).flatMap((c) => wrap(c, w, { breakWords }).split('\n')));
  const widths = Array.from({ length: columns }, (_, i) => longest(column(i).flatMap((c) => c.split('\n'))));
  const available = width - (3 * columns + 1);
  const floors = Array.from({ length: columns }, (_, i) => longest(column(i).flatMap((c) => c.split(/\s+/))));
  for (const breakWords of [false, true]) {
    while (widths.reduce((a, b) => a + b, 0) > available) {
      const candidates = widths.map((w, i) => (w > (breakWords ? 1 : floors[i]!) ? w : -1));
      const widest = Math.max(...candidates);
      if (widest < 0) break;
      const i = candidates.indexOf(widest);
      widths[i] = Math.min(widest - 1, taken(i, widest - 1, breakWords));
    }
  }
  return widths;
}

/**
 * A time as the manifest gives it (`2026-01-06 00:00:00.123`, or ISO), to
 * the second; without the time of day at midnight, as intervals on a day
 * grain are: `2026-01-06`.
 */
export function shortTime(value: string): string {
  const match = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]00(:?00)?)?$/.exec(value);
  if (!match) return value;
  return match[2] === '00:00:00' ? match[1]! : `${match[1]} ${match[2]}`;
}
