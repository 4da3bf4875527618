import { describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { ValidationError } from '../../domain/errors.ts';
import {
  checkRunName,
  executionNameProblem,
  MAX_EXECUTION_NAME_LENGTH,
  MAX_SCHEDULED_PIPELINE_NAME_LENGTH,
  manualRunName,
  parseScheduledTime,
  scheduledRunName,
} from '../../domain/run-name.ts';
import { planScheduledStart } from '../../domain/start-run.ts';
import { errorOf, pipelineWith, specWith } from './fixtures.ts';

describe('execution names', () => {
  it('accepts what StartExecution accepts and names what it refuses', () => {
    expect(executionNameProblem('sales_order_lines-20260401T0000')).toBeUndefined();
    expect(executionNameProblem('x'.repeat(MAX_EXECUTION_NAME_LENGTH))).toBeUndefined();
    expect(executionNameProblem('')).toMatch(/non-empty/);
    expect(executionNameProblem('x'.repeat(MAX_EXECUTION_NAME_LENGTH + 1))).toMatch(/at most 80 characters, got 81/);
    for (const bad of [
      ' ',
      '\t',
      '<',
      '>',
      '{',
      '}',
      '[',
      ']',
      '?',
      '*',
      '"',
      '#',
      '%',
      '\\',
      '^',
      '|',
      '~',
      '`',
      '$',
      '&',
      ',',
      ';',
      ':',
      '/',
      '\u0000',
      '\u001f',
      '\u007f',
      '\u009f',
      '\ud800',
    ]) {
      expect(executionNameProblem(`run${bad}1`), JSON.stringify(bad)).toMatch(/must not contain/);
    }
    // A surrogate pair (a character outside the BMP) is a character, not a lone surrogate.
    expect(executionNameProblem('run-\u{1F600}')).toBeUndefined();
  });

  it('names a scheduled run after its pipeline and its UTC time, in letters, digits, - and _', () => {
    expect(scheduledRunName('sales_order_lines', new Date('2026-04-01T04:00:00Z'))).toBe('sales_order_lines-scheduled-20260401T040000Z');
    expect(scheduledRunName('p', new Date('2026-04-01T04:00:07.250Z'))).toBe('p-scheduled-20260401T040007Z');
    expect(scheduledRunName('a'.repeat(MAX_SCHEDULED_PIPELINE_NAME_LENGTH), new Date('2026-04-01T04:00:00Z'))).toHaveLength(MAX_EXECUTION_NAME_LENGTH);
    expect(() => scheduledRunName('a'.repeat(MAX_SCHEDULED_PIPELINE_NAME_LENGTH + 1), new Date())).toThrow(/at most 80 characters/);
  });

  it("reads the Scheduler's scheduled time and refuses anything else", () => {
    expect(parseScheduledTime('2022-03-22T18:59:43Z').toISOString()).toBe('2022-03-22T18:59:43.000Z');
    for (const bad of ['2022-03-22T18:59:43+01:00', '2022-03-22 18:59:43Z', '2022-02-30T00:00:00Z', '<aws.scheduler.scheduled-time>', '', 42, undefined]) {
      expect(
        errorOf(() => parseScheduledTime(bad)),
        String(bad),
      ).toBeInstanceOf(ValidationError);
    }
  });
});

describe('a scheduled start', () => {
  const daily = pipelineWith({
    name: 'orders',
    chunk: { grain: 'day', timezone: 'Europe/Berlin' },
    historyStart: '2026-01-01T00:00:00+01:00',
    schedule: { expression: 'cron(0 6 * * ? *)' },
  });
  const hourly = pipelineWith({ name: 'clicks', chunk: { grain: 'hour', timezone: 'UTC' }, schedule: { expression: 'rate(1 hour)' } });

  it("plans up to the last chunk boundary at or before the scheduled time, in the pipeline's zone", () => {
    // 06:00 in Berlin on 1 April (summer time) is 04:00 UTC; the day began at 22:00 UTC the day before.
    expect(planScheduledStart({ pipeline: 'orders', scheduledTime: '2026-04-01T04:00:00Z' }, [daily, hourly])).toEqual({
      name: 'orders-scheduled-20260401T040000Z',
      input: { pipeline: 'orders', to: '2026-03-31T22:00:00.000Z' },
    });
    expect(planScheduledStart({ pipeline: 'clicks', scheduledTime: '2026-04-01T04:05:00Z' }, [daily, hourly]).input).toEqual({
      pipeline: 'clicks',
      to: '2026-04-01T04:00:00.000Z',
    });
  });

  it("refuses an unknown pipeline, an unknown field and a time that is not the Scheduler's", () => {
    expect(errorOf(() => planScheduledStart({ pipeline: 'nope', scheduledTime: '2026-04-01T04:00:00Z' }, [daily])).message).toMatch(/unknown pipeline "nope"/);
    expect(errorOf(() => planScheduledStart({ pipeline: 'orders', scheduledTime: '2026-04-01T04:00:00Z', to: 'x' }, [daily])).message).toMatch(
      /unknown field\(s\): "?to/,
    );
    expect(errorOf(() => planScheduledStart({ pipeline: 'orders' }, [daily])).message).toMatch(/scheduledTime must be a UTC time/);
    expect(errorOf(() => planScheduledStart([], [daily])).message).toMatch(/expected \{"pipeline"/);
  });
});

describe('a pipeline with a schedule', () => {
  it("must have a name its runs' names fit in, and one without a schedule need not", () => {
    const long = 'p'.repeat(MAX_SCHEDULED_PIPELINE_NAME_LENGTH + 1);
    const refused = errorOf(() => definePipeline(specWith({ name: long, schedule: { expression: 'cron(0 6 * * ? *)' } })));
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused.message).toContain(`name must be at most ${MAX_SCHEDULED_PIPELINE_NAME_LENGTH} characters for a pipeline with a schedule`);
    expect(definePipeline(specWith({ name: long })).name).toBe(long);
    expect(
      definePipeline(specWith({ name: 'p'.repeat(MAX_SCHEDULED_PIPELINE_NAME_LENGTH), schedule: { expression: 'cron(0 6 * * ? *)' } })).schedule,
    ).toBeDefined();
  });
});

describe('manualRunName', () => {
  const interval = { from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-04-01T00:00:00Z') };

  it('names a run after its pipeline and interval; later attempts add their number', () => {
    expect(manualRunName('sales_order_lines', interval, 1)).toBe('sales_order_lines-20260301T000000Z-20260401T000000Z');
    expect(manualRunName('sales_order_lines', interval, 2)).toBe('sales_order_lines-20260301T000000Z-20260401T000000Z-2');
  });

  it('keeps a long pipeline name to what fits in 80 characters, the interval and attempt whole', () => {
    const name = manualRunName('p'.repeat(80), interval, 12);
    expect(name).toHaveLength(MAX_EXECUTION_NAME_LENGTH);
    expect(name.endsWith('-20260301T000000Z-20260401T000000Z-12')).toBe(true);
    expect(executionNameProblem(name)).toBeUndefined();
  });
});

describe('checkRunName', () => {
  const interval = { from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-04-01T00:00:00Z') };

  it('names check n of an interval apart from its run; later attempts add their number', () => {
    expect(checkRunName('sales_order_lines', interval, 1, 1)).toBe('sales_order_lines-check1-20260301T000000Z-20260401T000000Z');
    expect(checkRunName('sales_order_lines', interval, 2, 3)).toBe('sales_order_lines-check2-20260301T000000Z-20260401T000000Z-3');
    expect(checkRunName('sales_order_lines', interval, 1, 1)).not.toBe(manualRunName('sales_order_lines', interval, 1));
  });

  it('keeps a long pipeline name to what fits in 80 characters, the check, interval and attempt whole', () => {
    const name = checkRunName('p'.repeat(80), interval, 12, 4);
    expect(name).toHaveLength(MAX_EXECUTION_NAME_LENGTH);
    expect(name.endsWith('-check12-20260301T000000Z-20260401T000000Z-4')).toBe(true);
    expect(executionNameProblem(name)).toBeUndefined();
  });
});
