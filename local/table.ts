/** Plain-text tables and bars for the terminal (no colours: output is often a CI log). */
export { renderTable } from '../domain/text-table.ts';

export function bar(fraction: number, width = 30): string {
  const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
  return '█'.repeat(filled) + '░'.repeat(width - filled);
}

/** One row per step: where in the run it started and ended, drawn on a shared time axis. */
export function renderTimeline(steps: readonly { name: string; start: number; end: number; failed?: boolean }[], width = 50): string {
  if (steps.length === 0) return '(no steps)';
  const t0 = Math.min(...steps.map((s) => s.start));
  const t1 = Math.max(...steps.map((s) => s.end));
  const span = Math.max(1, t1 - t0);
  const nameWidth = Math.max(...steps.map((s) => s.name.length));
  return steps
    .map((s) => {
      const from = Math.floor(((s.start - t0) / span) * width);
      const to = Math.max(from + 1, Math.ceil(((s.end - t0) / span) * width));
      const body = ' '.repeat(from) + (s.failed ? '✗' : '█').repeat(to - from) + ' '.repeat(Math.max(0, width - to));
      const ms = s.end - s.start;
      return `${s.name.padEnd(nameWidth)} │${body}│ ${(ms / 1000).toFixed(2).padStart(6)} s`;
    })
    .join('\n');
}
