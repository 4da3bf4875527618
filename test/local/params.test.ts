import { describe, expect, it } from 'vitest';
import { referencedNames } from '../../domain/redshift-sql/parameters.ts';
import { DataApiError } from '../../local/data-api/errors.ts';
import { checkAllReferenced, translate, validateParameters } from '../../local/data-api/params.ts';

const p = (entries: Record<string, string>) => Object.entries(entries).map(([name, value]) => ({ name, value }));

describe(':name parameters', () => {
  it('rewrites each name to one positional parameter, reusing it when repeated', () => {
    const out = translate('SELECT :a, :b, :a + 1', p({ a: '1', b: 'x' }));
    expect(out).toEqual({ text: 'SELECT $1, $2, $1 + 1', values: ['1', 'x'] });
  });

  it('leaves casts, string literals, quoted identifiers, comments and dollar quotes alone', () => {
    const sql = ["SELECT :v::int, ':x', E'it\\'s :y', \"col:z\"", '-- :c1', '/* :c2 /* nested :c3 */ still :c4 */', '$$ :d1 $$, $tag$ :d2 $tag$, x$1'].join(
      '\n',
    );
    expect([...referencedNames(sql)]).toEqual(['v']);
    expect(translate(sql, p({ v: '5' })).text).toContain('SELECT $1::int');
  });

  it('rejects a referenced name without a value as the real API does', () => {
    expect(() => translate('SELECT :missing', [])).toThrow(DataApiError);
    expect(() => translate('SELECT :missing', [])).toThrow(/missing/);
  });

  it('rejects a supplied parameter no statement references', () => {
    expect(() => checkAllReferenced(['SELECT :a'], p({ a: '1', b: '2' }))).toThrow(/'b'/);
    expect(() => checkAllReferenced(['SELECT :a', 'SELECT :b'], p({ a: '1', b: '2' }))).not.toThrow();
  });

  it('applies the API constraints: name pattern, non-empty value, no duplicates, non-empty list', () => {
    expect(() => validateParameters([{ name: 'a-b', value: '1' }])).toThrow(/pattern/);
    expect(() => validateParameters([{ name: 'a', value: '' }])).toThrow(/length/);
    expect(() => validateParameters(p({ a: '1' }).concat(p({ a: '2' })))).toThrow(/more than once/);
    expect(() => validateParameters([])).toThrow(/length/);
    expect(validateParameters(undefined)).toEqual([]);
  });
});
