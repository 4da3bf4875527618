import { describe, expect, it } from 'vitest';
import { differingKeys, differingSegments } from '../../../../domain/gate/sql/locate.ts';
import { gateAggregates } from '../../../../domain/gate/sql/reconcile.ts';
import { checkSql } from '../../../../domain/redshift-sql/check.ts';
import { pipelineWith } from '../../fixtures.ts';
import { batch, itIsASafeSingleStatement, itKeepsTheSourceQueryClosed, pipeline } from '../../sql/support.ts';

const columns = ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(12,2)', 'region character varying(16)'];
const measured = pipelineWith({ checks: { measures: ['amount'], dimensions: ['region'] } });
const aggregates = gateAggregates(measured, columns);
// The checksum's row text has literals of its own (out-of-band.ts): the safe-statement checks use the figures without it.
const plain = gateAggregates(pipelineWith({ checks: { measures: ['amount'], contentChecksum: false } }), columns);
const types = new Map(columns.map((c) => [c.split(' ')[0]!, c.slice(c.indexOf(' ') + 1)]));

describe('the statements that locate a difference', () => {
  itIsASafeSingleStatement([
    ['differingSegments', differingSegments(measured, batch, [1, 3], plain, types, 20)],
    [
      'differingSegments (hour grain, Berlin)',
      differingSegments(pipelineWith({ chunk: { grain: 'hour', timezone: 'Europe/Berlin' } }), batch, [0], plain, new Map(), 20),
    ],
    ['differingKeys', differingKeys(measured, batch, [1, 3], plain, 5)],
  ]);
  itKeepsTheSourceQueryClosed([
    ['differingSegments', () => differingSegments(pipelineWith({ sourceSql: `${pipeline.sourceSql} -- note` }), batch, [1], aggregates, types, 20)],
    ['differingKeys', () => differingKeys(pipelineWith({ sourceSql: `${pipeline.sourceSql} -- note` }), batch, [1], aggregates, 5)],
  ]);

  it('use nothing Redshift lacks', () => {
    expect(checkSql(differingSegments(measured, batch, [1, 3], aggregates, types, 20).sql)).toEqual([]);
    expect(checkSql(differingKeys(measured, batch, [1, 3], aggregates, 5).sql)).toEqual([]);
  });

  it('read only the chunks examined, split by day and the dimensions, the source value cast to staging type', () => {
    const { sql } = differingSegments(measured, batch, [1, 3], aggregates, types, 20);
    expect(sql).toContain('chunk_index IN (1, 3)');
    expect(sql).toContain(`DATE_TRUNC('day', s."ordered_at") AS ap_segment`);
    expect(sql).toContain('CAST(s."region" AS character varying(16)) AS ap_d0');
    expect(sql).toMatch(
      /HAVING SUM\(b\.source_rows\) <> SUM\(b\.staging_rows\) OR SUM\(b\.source_checksum\) <> SUM\(b\.staging_checksum\) OR SUM\(b\.source_sum_0\) <> SUM\(b\.staging_sum_0\)/,
    );
    expect(sql).toMatch(/LIMIT 20$/);
  });

  it('split an hourly pipeline by the hour of the chunk timezone', () => {
    const { sql } = differingSegments(pipelineWith({ chunk: { grain: 'hour', timezone: 'Europe/Berlin' } }), batch, [0], aggregates, new Map(), 20);
    expect(sql).toContain(`DATE_TRUNC('hour', (s."ordered_at" AT TIME ZONE 'UTC') AT TIME ZONE 'Europe/Berlin')`);
  });

  it('sample a few keys of each class in key order, with the class count', () => {
    const { sql } = differingKeys(measured, batch, [2], aggregates, 5);
    expect(sql).toContain('ROW_NUMBER() OVER (PARTITION BY ap_class ORDER BY ap_k0) AS ap_n');
    expect(sql).toContain('COUNT(*) OVER (PARTITION BY ap_class) AS ap_keys');
    expect(sql).toMatch(/WHERE ap_n <= 5\s+ORDER BY ap_class, ap_n$/);
  });
});
