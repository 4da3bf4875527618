// A copy of a workflow fixture for every test of the calling describe
// (docs/decisions/independent-tests.md): made in a beforeEach, closed in an
// afterEach, for tests that each act (run an execution, inject a fault,
// write SQL) and so may not share a copy, such as the cases of an it.each.
// useFork in test/support/workflow.ts gives one copy to a whole describe.
import { afterEach, beforeEach } from 'vitest';
import type { UseWorkflowOptions, Workflow, WorkflowFixture } from './workflow.ts';

/** The calling describe's tests each get a new fork of `fixture`; the returned workflow is the running test's. */
export function useForkPerTest(fixture: WorkflowFixture<unknown>, options?: UseWorkflowOptions): Workflow {
  let wf: Workflow | undefined;
  beforeEach(async () => {
    wf = await fixture.fork(options);
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
