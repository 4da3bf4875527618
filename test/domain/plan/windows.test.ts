import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { grainUnits, sizeChunks } from '../../../domain/plan/chunk-sizing.ts';
import { planChunks } from '../../../domain/plan/plan.ts';
import { checkWindowsCover, chunksPerWindow, chunkWindows, DEFAULT_CHUNKS_PER_WINDOW, windowChunks, windowItem } from '../../../domain/plan/windows.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

const at = (iso: string) => new Date(iso);
const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });
const year = { from: at('2025-12-31T23:00:00Z'), to: at('2026-12-31T23:00:00Z') };

describe('chunkWindows', () => {
  it('leaves a batch that fits one window inline: no windows', () => {
    expect(chunkWindows(planChunks(year, berlin), berlin, 365)).toEqual([]);
  });

  it('cuts calendar chunks into windows of consecutive chunks that cover the batch, each cut back into exactly its chunks', () => {
    const chunks = planChunks(year, berlin);
    const windows = chunkWindows(chunks, berlin, 100);

    expect(windows.map((w) => [w.firstChunk, w.chunkCount])).toEqual([
      [0, 100],
      [100, 100],
      [200, 100],
      [300, 65],
    ]);
    // One unit per chunk: nothing more to record.
    expect(windows.every((w) => w.unitCounts === undefined)).toBe(true);
    expect(() => checkWindowsCover(windows, year, chunks.length)).not.toThrow();
    // Across both of Berlin's clock changes (23- and 25-hour days).
    expect(windows.flatMap((w) => windowChunks(w, berlin))).toEqual(chunks);
    expect(windowItem(windows[3]!)).toEqual({ index: 3, firstChunk: 300, chunkCount: 65 });
  });

  it('records how many grain units each sized chunk holds, and cuts the window back into those chunks', () => {
    const sized = pipelineWith({ chunk: { grain: 'hour', targetRows: 100 } });
    const interval = { from: at('2026-01-01T00:00:00Z'), to: at('2026-01-11T00:00:00Z') };
    const units = grainUnits(interval, sized);
    // Uneven volume: chunks of 1 to several hours.
    const volume = new Map(units.map((u, i) => [u.start.getTime(), (i * 37) % 120]));
    const chunks = sizeChunks(units, volume, 100);
    const windows = chunkWindows(chunks, sized, 20);

    expect(chunks.length).toBeGreaterThan(40);
    expect(windows.some((w) => w.unitCounts !== undefined && w.unitCounts.split(',').some((n) => n !== '1'))).toBe(true);
    expect(windows.flatMap((w) => windowChunks(w, sized))).toEqual(chunks);
    expect(() => checkWindowsCover(windows, interval, chunks.length)).not.toThrow();
  });

  it('refuses a window that does not cut into the chunks it records, and windows that leave a gap', () => {
    const chunks = planChunks(year, berlin);
    const [first, second] = chunkWindows(chunks, berlin, 100);

    const wrong = errorOf(() => windowChunks({ ...first!, chunkCount: 99 }, berlin));
    expect(wrong).toBeInstanceOf(ValidationError);
    expect(wrong.message).toContain('does not cut into the chunks it was planned with');
    expect(() => windowChunks({ ...first!, unitCounts: '1,x' }, berlin)).toThrow(ValidationError);
    expect(() => checkWindowsCover([second!], year, chunks.length)).toThrow(/window 1 starts at/);
  });
});

describe('chunksPerWindow', () => {
  it(`is ${DEFAULT_CHUNKS_PER_WINDOW} unless the environment asks for fewer; a bad value is an error`, () => {
    expect(chunksPerWindow({})).toBe(DEFAULT_CHUNKS_PER_WINDOW);
    expect(chunksPerWindow({ CHUNKS_PER_WINDOW: '3' })).toBe(3);
    for (const bad of ['0', '1001', '2.5', 'many']) expect(() => chunksPerWindow({ CHUNKS_PER_WINDOW: bad })).toThrow(/whole number from 1 to 1000/);
  });
});
