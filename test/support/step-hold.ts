// A step held until the test lets it go: the first invocation of `state` (each,
// with `every`) waits; `reached` resolves with its input; `release()` lets every
// held one go on, and later ones pass. Why: docs/decisions/tests-and-timing.md
//
//   const hold = holdStep(wf, 'LoadChunk'); await wf.start(input); await hold.reached; hold.release();
import type { TaskOverride, Workflow } from './workflow.ts';

export interface StepHold {
  /** Resolves with the input of the first invocation held. */
  readonly reached: Promise<unknown>;
  /** Resolves with the output (or the error) of the first held invocation once it has ended. */
  readonly ended: Promise<unknown>;
  release(): void;
}

export function holdStep(wf: Pick<Workflow, 'faults'>, state: keyof Workflow['faults'], options: { readonly before?: TaskOverride } = {}): StepHold {
  let reach!: (input: unknown) => void;
  let end!: (outcome: unknown) => void;
  let letGo!: () => void;
  const reached = new Promise<unknown>((resolve) => (reach = resolve));
  const ended = new Promise<unknown>((resolve) => (end = resolve));
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let first = true;
  wf.faults[state] = async (input, next) => {
    const isFirst = first;
    first = false;
    if (isFirst) reach(input);
    await released;
    const call = options.before ? options.before(input, next) : next(input);
    if (!isFirst) return call;
    return call.then(
      (output) => (end(output), output),
      (error: unknown) => {
        end(error);
        throw error;
      },
    );
  };
  return { reached, ended, release: () => letGo() };
}
