/**
 * The workflow's words in the command line's terms: a refusal's input field
 * (`input.to`) becomes the flag typed (`--to`), an alert's input to start the
 * command to repeat (domain/cli-command.ts). Every message the command line prints
 * from the workflow goes through inCliTerms, and only there.
 * Why: docs/decisions/next-steps-as-commands.md
 */
import { commandFor } from '../domain/cli-command.ts';

/** Input fields as the commands' flags; the longest first, so that `input.rollback.to` is not read as `input.r...`. */
const FLAGS: readonly [string, string][] = [
  ['input.rollback.to', '--to'],
  ['input from/to', '--from/--to'],
  ['input.from', '--from'],
  ['input.to', '--to'],
];

/** Phrases about starting executions, as a command line user does it. */
const PHRASES: readonly [RegExp, string][] = [
  [/correct the execution input/g, 'correct the command'],
  [/start a new execution/g, 'run it again'],
];

/** Where a JSON object that starts at `start` ends (the index after its closing brace), or -1. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth += 1;
    else if (c === '}' && (depth -= 1) === 0) return i + 1;
  }
  return -1;
}

/** An execution input: a JSON object naming a pipeline or a group. */
function executionInput(json: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value) && ('pipeline' in value || 'group' in value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `message` with each execution input in it replaced by the command that
 * starts it (in backquotes; `stateMachine` as commandFor takes it), and the
 * fields by the flags.
 */
export function inCliTerms(message: string, stateMachine: string): string {
  let out = '';
  let at = 0;
  for (let start = message.indexOf('{'); start !== -1; start = message.indexOf('{', start + 1)) {
    if (start < at) continue;
    const end = objectEnd(message, start);
    const input = end === -1 ? undefined : executionInput(message.slice(start, end));
    if (!input) continue;
    // "start an execution with input X" reads "run `command`"; "a run with input X", "`command`".
    const before = message.slice(at, start);
    const lead = /(start an execution with input|(?:[Aa] run|an execution) with input) $/.exec(before);
    const verb = lead?.[1] === 'start an execution with input' ? 'run ' : '';
    out += `${lead ? before.slice(0, lead.index) : before}${verb}\`${commandFor(input, stateMachine)}\``;
    at = end;
  }
  out += message.slice(at);
  for (const [field, flag] of FLAGS) out = out.split(field).join(flag);
  for (const [phrase, said] of PHRASES) out = out.replace(phrase, said);
  return out;
}
