// The command a person repeats for an execution input (domain/cli-command.ts).
import { describe, expect, it } from 'vitest';
import { commandFor } from '../../domain/cli-command.ts';

const ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:atomic-publish';
const [FROM, TO] = ['2026-01-01T00:00:00.000Z', '2026-01-06T00:00:00.000Z'];

describe('commandFor', () => {
  it.each([
    ['a scheduled run', { pipeline: 'orders' }, 'atomic-publish run orders'],
    ['a run up to a time', { pipeline: 'orders', to: TO }, `atomic-publish run orders --to ${TO}`],
    ['a backfill', { pipeline: 'orders', from: FROM, to: TO }, `atomic-publish backfill orders --from ${FROM} --to ${TO}`],
    ['a check', { pipeline: 'orders', from: FROM, to: TO, check: true }, `atomic-publish check orders --from ${FROM} --to ${TO}`],
    ['a rollback of the latest publication', { pipeline: 'orders', rollback: {} }, 'atomic-publish rollback orders'],
    ['a rollback to a batch', { pipeline: 'orders', rollback: { to: '0123456789abcdef' } }, 'atomic-publish rollback orders --to 0123456789abcdef'],
  ])('%s: the atomic-publish command', (_, input, command) => {
    expect(commandFor(input, ARN)).toBe(command);
  });

  it.each([
    ['a restatement', { pipeline: 'orders', from: FROM, to: TO, restate: true }],
    ['a migration', { pipeline: 'orders', migrate: true }],
    ['a group run', { group: 'finance' }],
    ['a run from a time without an end', { pipeline: 'orders', from: FROM }],
    ['a check without its interval', { pipeline: 'orders', check: true }],
    ['a rollback with an interval', { pipeline: 'orders', to: TO, rollback: {} }],
    ['no object at all', 'orders'],
  ])('%s, which no atomic-publish command starts: start-execution with the input, quoted for the shell', (_, input) => {
    expect(commandFor(input, ARN)).toBe(`aws stepfunctions start-execution --state-machine-arn ${ARN} --input '${JSON.stringify(input)}'`);
  });

  it('quotes a value the shell would split or expand', () => {
    expect(commandFor({ pipeline: "it's mine" }, ARN)).toBe(`atomic-publish run 'it'\\''s mine'`);
    expect(commandFor({ group: 'g' }, '"$ATOMIC_PUBLISH_STATE_MACHINE_ARN"')).toContain('--state-machine-arn "$ATOMIC_PUBLISH_STATE_MACHINE_ARN" --input');
  });
});
