import { describe, expect, it } from 'vitest';
import { clip, clipJsonUtf8, clipUtf8, ECHO_MAX_CHARS, echo, printable, truncateUtf8 } from '../../domain/text.ts';

const MEGABYTE = 1024 * 1024;

describe('echo', () => {
  it.each([
    ['a string', 'orders', '"orders"'],
    ['a number', 42, '42'],
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined'],
    ['an object', { pipeline: 'orders' }, '{"pipeline":"orders"}'],
    ['a BigInt, which has no JSON', 10n, '10'],
  ])('renders %s as JSON, or as text where JSON has none', (_what, value, expected) => {
    expect(echo(value)).toBe(expected);
  });

  it('renders a value with a cycle as text instead of throwing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;

    expect(echo(cyclic)).toBe('[object Object]');
  });

  it('cuts a megabyte-long value to the bound, with an ellipsis and the full length', () => {
    const echoed = echo('x'.repeat(MEGABYTE));

    expect(echoed).toBe(`"${'x'.repeat(ECHO_MAX_CHARS - 1)}... (1048578 characters)`);
  });

  it('cuts a megabyte of nested input the same way', () => {
    expect(echo({ rows: Array.from({ length: 100_000 }, (_, i) => i) }).length).toBeLessThanOrEqual(ECHO_MAX_CHARS + 30);
  });
});

describe('clip', () => {
  it('leaves text within the bound alone', () => {
    expect(clip('short', 10)).toBe('short');
  });

  it('never cuts inside a surrogate pair', () => {
    const clipped = clip(`${'a'.repeat(9)}😀tail`, 10);

    expect(clipped).toBe(`${'a'.repeat(9)}... (15 characters)`);
  });
});

describe('clipUtf8', () => {
  it('fits the bound in UTF-8 bytes, note included, for text of multi-byte characters', () => {
    const clipped = clipUtf8('€'.repeat(MEGABYTE), 1000);

    expect(Buffer.byteLength(clipped, 'utf8')).toBeLessThanOrEqual(1000);
    expect(clipped).toMatch(/^€+\.\.\. \(3145728 bytes in all\)$/);
  });

  it('leaves text within the bound alone', () => {
    expect(clipUtf8('€€', 6)).toBe('€€');
  });
});

describe('clipJsonUtf8', () => {
  const encoded = (text: string) => Buffer.byteLength(JSON.stringify(text), 'utf8');

  it('leaves text whose JSON encoding fits as it is', () => {
    expect(clipJsonUtf8('say "hi"', 12)).toBe('say "hi"');
  });

  it.each([
    ['plain letters', 'x'],
    ['double quotes (2 bytes each once encoded)', '"'],
    ['control characters (6 bytes each once encoded)', '\u0001'],
    ['3-byte characters', '€'],
  ])('cuts %s so that the JSON encoding, note included, fits the bound, and says how long the text was', (_what, char) => {
    const text = char.repeat(100_000);
    const clipped = clipJsonUtf8(text, 1_000);
    expect(encoded(clipped)).toBeLessThanOrEqual(1_000);
    expect(encoded(clipped)).toBeGreaterThan(900);
    expect(clipped).toMatch(new RegExp(`^(${char === '"' ? '"' : char})+\\.\\.\\. \\(${Buffer.byteLength(text)} bytes in all\\)$`));
  });

  it('never splits a surrogate pair', () => {
    const clipped = clipJsonUtf8('😀'.repeat(1_000), 203);
    expect(clipped.replace(/\.\.\. \(\d+ bytes in all\)$/, '')).toMatch(/^(😀)+$/);
  });
});

describe('truncateUtf8', () => {
  it('cuts at a character boundary at or below the byte bound', () => {
    expect(truncateUtf8('a€b', 3)).toBe('a');
    expect(truncateUtf8('a€b', 4)).toBe('a€');
  });
});

describe('printable', () => {
  it('shows a backslash and control characters as ?, so that a SQL literal can carry the text, and leaves the rest', () => {
    const text = printable('C:\\temp\tx\nSKU-€');

    expect(text).toBe('C:?temp?x?SKU-€');
  });
});
