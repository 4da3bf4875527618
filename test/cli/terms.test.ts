// The workflow's messages in the command line's terms (cli/terms.ts): the
// flags for the input's fields, the command for an execution input.
import { describe, expect, it } from 'vitest';
import { inCliTerms } from '../../cli/terms.ts';

const ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:atomic-publish';

describe('inCliTerms', () => {
  it('names the flags for the input fields a refusal names', () => {
    expect(inCliTerms('input.to 2026-01-05T03:00:00.000Z is not on a day boundary in UTC', ARN)).toBe(
      '--to 2026-01-05T03:00:00.000Z is not on a day boundary in UTC',
    );
    expect(inCliTerms('input.from must be omitted or equal historyStart', ARN)).toBe('--from must be omitted or equal historyStart');
    expect(inCliTerms('input.rollback.to must be a batch id', ARN)).toBe('--to must be a batch id');
  });

  it('says "run `command`" for "start an execution with input {...}", and the command for any other input', () => {
    expect(inCliTerms('fix the cause the error names, then start an execution with input {"pipeline":"orders","to":"2026-01-06T00:00:00.000Z"}.', ARN)).toBe(
      'fix the cause the error names, then run `atomic-publish run orders --to 2026-01-06T00:00:00.000Z`.',
    );
    expect(inCliTerms('A run with input {"pipeline":"orders"} ends at NothingToPublish.', ARN)).toBe('`atomic-publish run orders` ends at NothingToPublish.');
    expect(inCliTerms('roll back to one with {"pipeline":"orders","rollback":{"to":"0123456789abcdef"}}', ARN)).toBe(
      'roll back to one with `atomic-publish rollback orders --to 0123456789abcdef`',
    );
    expect(inCliTerms('newest first, with {"pipeline": "orders", "rollback": {}}; input.rollback.to, a batch', ARN)).toBe(
      'newest first, with `atomic-publish rollback orders`; --to, a batch',
    );
  });

  it('leaves JSON that is no execution input, and text with braces, as it is', () => {
    for (const text of ['observed {"rows": 3} in {a} and {', 'a } before { "x" }']) expect(inCliTerms(text, ARN)).toBe(text);
  });

  it('replaces every input of a message, whatever braces the strings in them hold', () => {
    expect(inCliTerms('{"pipeline":"a{b}","to":"x"} or {"group":"g"}', ARN)).toBe(
      `\`atomic-publish run 'a{b}' --to x\` or \`aws stepfunctions start-execution --state-machine-arn ${ARN} --input '{"group":"g"}'\``,
    );
  });
});
