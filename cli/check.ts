/**
 * `check`: the reconciliation gate of an interval without publishing. It
 * starts the execution input `"check": true`
 * (docs/decisions/checking-an-interval-without-publishing.md), follows it as `run` does, and prints
 * the check results its batch recorded: exit 0 when the gate passed, 1
 * when it failed.
 */
import { BatchStatus, CHECK_ENDED } from '../domain/batch.ts';
import { LOCATION_CHECKS } from '../domain/gate/locate.ts';
import { batchCheckResults } from '../domain/manifest/sql/cli.ts';
import { batchIdFor, nextRerun } from '../domain/plan/plan.ts';
import { findBatch } from '../domain/plan/sql/plan.ts';
import { checkRunName } from '../domain/run-name.ts';
import type { Context } from './context.ts';
import { CliError, ExitCode } from './errors.ts';
import { type FollowOptions, type Succeeded, startAndFollow } from './run.ts';
import { type CliIo, intervalOf, manifestPresent, pipelineNamed, prose, query, table, text } from './shared.ts';

/** One check's result as `check` prints it. */
export interface CheckLine {
  readonly check: string;
  readonly passed: boolean;
  readonly observed: string;
  readonly expected: string;
  readonly details: string;
}

const isLocation = (check: string) => (LOCATION_CHECKS as readonly string[]).includes(check);

/** The failing checks first, then where the content differs, then the ones that passed; by name within each. */
export function checkOrder(lines: readonly CheckLine[]): CheckLine[] {
  const rank = (l: CheckLine) => (isLocation(l.check) ? 1 : l.passed ? 2 : 0);
  return [...lines].sort((a, b) => rank(a) - rank(b) || a.check.localeCompare(b.check));
}

export async function check(ctx: Context, io: CliIo, name: string, opts: { from?: string; to?: string } & FollowOptions): Promise<number> {
  const pipeline = pipelineNamed(name);
  if (opts.from === undefined || opts.to === undefined) throw new CliError("check needs --from and --to (on the pipeline's grain)");
  const interval = intervalOf(pipeline, opts.from, opts.to);
  // The check Plan will run: the first of the interval not ended (Plan chooses it the same way).
  const n = (await manifestPresent(ctx))
    ? (
        await nextRerun(
          'check',
          CHECK_ENDED,
          async (k) => (await query(ctx, findBatch(batchIdFor(pipeline, interval, { kind: 'check', n: k })), 'check:find'))[0]?.status,
        )
      ).n
    : 1;
  const batchId = batchIdFor(pipeline, interval, { kind: 'check', n });
  const input = { pipeline: pipeline.name, from: interval.from.toISOString(), to: interval.to.toISOString(), check: true };
  const again = ctx.commandFor(input);
  // check's own fields, in every result it prints: the gate's checks once it ran.
  const fields = { check: n, passed: null, failed: [], checks: [] };
  const nameOf = (attempt: number) => checkRunName(pipeline.name, interval, n, attempt);
  const succeeded: Succeeded = async (result, output) => {
    const planned = text((output.plan as { batch?: { batchId?: unknown } } | undefined)?.batch?.batchId) || batchId;
    const rows = await query(ctx, batchCheckResults(planned), 'check:results');
    const lines = checkOrder(
      rows
        .filter((r) => r.check_name !== null && r.check_name !== undefined)
        .map((r) => ({
          check: text(r.check_name),
          passed: r.passed === true || r.passed === 'true',
          observed: text(r.observed),
          expected: text(r.expected),
          details: text(r.details),
        })),
    );
    const verdict = (output.reconcile as { passed?: unknown } | undefined)?.passed;
    const passed = typeof verdict === 'boolean' ? verdict : text(rows[0]?.status) === BatchStatus.CHECK_PASSED;
    const failed = lines.filter((l) => !l.passed && !isLocation(l.check)).map((l) => l.check);
    const next = passed
      ? undefined
      : `nothing was published. The failing checks above say what differs${lines.some((l) => isLocation(l.check)) ? `; the ${LOCATION_CHECKS.join(', ')} rows say where` : ''} ` +
        `(all of it in atomic_publish.check_results, batch ${planned}). Once the source or the spec is right, check again (\`${again}\`): ` +
        `a new check, against the source as it is then; a run or backfill of the interval publishes only when its own gate passes.`;
    // The gate's verdict, not the execution's: a check that ran to its end SUCCEEDED whatever the gate said.
    const summary = { ...result, outcome: passed ? 'passed' : 'failed', batchId: planned, next: next ?? null, check: n, passed, failed, checks: lines };
    if (ctx.json) {
      io.stdout(JSON.stringify(summary));
    } else {
      const checks = table(
        io,
        ['check', 'verdict', 'observed', 'expected'],
        lines.map((l) => [l.check, l.passed ? 'passed' : 'FAILED', l.observed, l.expected]),
      );
      const said = [
        ...lines.filter((l) => !l.passed && l.details !== '').map((l) => `${l.check}: ${l.details}`),
        passed
          ? `Check ${n} of ${pipeline.name} ${input.from} .. ${input.to} PASSED (execution ${text(result.execution)}, batch ${planned}); nothing was published.`
          : `Check ${n} of ${pipeline.name} ${input.from} .. ${input.to} FAILED: ${failed.join(', ') || 'see the checks above'} (execution ${text(result.execution)}, batch ${planned}).`,
      ];
      io.stdout(`${checks}\n${prose(io, said.join('\n'))}`);
      if (next !== undefined) io.stderr(prose(io, `Next step: ${next}`));
    }
    return passed ? ExitCode.OK : ExitCode.RUN_FAILED;
  };
  return startAndFollow(ctx, io, { pipeline, nameOf, input, batchId, opts, fields, succeeded });
}
