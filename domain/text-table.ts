/** Plain-text tables for terminals, logs and alert e-mails (monospace, no colours). */

export function renderTable(headers: readonly string[], rows: readonly (readonly unknown[])[], align?: readonly ('l' | 'r')[]): string {
  const cells = rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '' : String(cell))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const pad = (text: string, i: number) => ((align?.[i] ?? 'l') === 'r' ? text.padStart(widths[i]!) : text.padEnd(widths[i]!));
  const line = (left: string, mid: string, right: string) => left + widths.map((w) => '─'.repeat(w + 2)).join(mid) + right;
  const out = [line('┌', '┬', '┐'), `│ ${headers.map(pad).join(' │ ')} │`, line('├', '┼', '┤')];
  for (const row of cells) out.push(`│ ${headers.map((_, i) => pad(row[i] ?? '', i)).join(' │ ')} │`);
  out.push(line('└', '┴', '┘'));
  return out.join('\n');
}
