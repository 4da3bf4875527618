import { describe, expect, it } from 'vitest';
import { manifestDdl } from '../../../domain/manifest/sql/manifest.ts';
import { checkSql } from '../../../domain/redshift-sql/check.ts';
import { ENDS_TRANSACTION, REDSHIFT_PAGES, UNSUPPORTED } from '../../../domain/redshift-sql/unsupported.ts';

const pages: { title: string; url: string }[] = Object.values(REDSHIFT_PAGES);

describe('the list of constructs Redshift does not support', () => {
  it.each([...UNSUPPORTED, ...ENDS_TRANSACTION].map((e) => [e.construct, e]))('cites a Redshift documentation page for %s', (_, entry) => {
    expect(entry.citation.title).not.toBe('');
    expect(entry.citation.url).toMatch(/^https:\/\/docs\.aws\.amazon\.com\/redshift\/latest\/dg\/[A-Za-z0-9_-]+\.html$/);
    expect(pages).toContainEqual(entry.citation);
  });

  it('names each construct once', () => {
    const names = UNSUPPORTED.map((e) => e.construct);
    expect(new Set(names).size).toBe(names.length);
  });

  it('finds nothing in the manifest DDL the project installs on Redshift', () => {
    expect(manifestDdl(new Date('2026-01-01T00:00:00Z')).flatMap((sql) => checkSql(sql))).toEqual([]);
  });
});
