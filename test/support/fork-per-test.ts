// A fork of a workflow fixture for every test of the calling describe, for
// describes whose tests each act: no test sees what another did.
// Why: docs/decisions/independent-tests.md
//
//   describe('refusals', () => { const wf = useForkPerTest(fixture); it(...); it(...); });   // a new copy per test
import { afterEach, beforeEach } from 'vitest';
import type { UseWorkflowOptions, Workflow, WorkflowFixture } from './workflow.ts';

/**
 * A new fork of `fixture` (with `options`, as `fixture.fork` takes them)
 * made before each test of the calling describe and closed after it; the
 * returned workflow stands for the current test's.
 */
export function useForkPerTest(fixture: WorkflowFixture<unknown>, options?: UseWorkflowOptions | (() => UseWorkflowOptions)): Workflow {
  let wf: Workflow | undefined;
  beforeEach(async () => {
    wf = await fixture.fork(typeof options === 'function' ? options() : options);
  });
  afterEach(async () => {
    const closing = wf;
    wf = undefined;
    await closing?.close();
  });
  return new Proxy({} as Workflow, {
    get(_target, key) {
      if (!wf) throw new Error(`a per-test fork used outside a test of the describe that made it (reading ${String(key)})`);
      return Reflect.get(wf, key, wf);
    },
  });
}
