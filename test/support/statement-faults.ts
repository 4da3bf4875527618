// Faults inside a step, after a statement it submitted has completed: within the
// step invocation the test marks (an AsyncLocalStorage context, since Map
// iterations run concurrently), the wait of the Nth statement throws InjectedFault
// once the statement has ended, as a Lambda dying right after it would.
// Why: docs/decisions/tests-and-timing.md ("The fault matrix")
//
//   const counter = statementCounter();
//   wf.faults.Reconcile = (input, next) => counter.within({ failAt: 2 }, () => next(input));
import { AsyncLocalStorage } from 'node:async_hooks';
import { Warehouse } from '../../functions/commons/warehouse.ts';

/** What a test injects: not a name any Retry of the state machine matches, so the step fails to RecordFailure. */
export class InjectedFault extends Error {
  override name = 'InjectedFault';
}

export interface StatementScope {
  /** Throw after the wait of this statement (1-based) ends. @default - count only */
  readonly failAt?: number;
  /** Awaited after that statement ended, before the throw (e.g. readers reading at that point). */
  readonly onFault?: () => Promise<void>;
  /** Called before a BatchExecuteStatement whose name contains `beforeBatch.match` is submitted. */
  readonly beforeBatch?: { readonly match: string; readonly hook: () => Promise<void> };
}

export interface StatementLog {
  /** Names of the statements waited for, in order. */
  readonly names: string[];
  /** The fault was thrown. */
  fired: boolean;
}

const scopes = new AsyncLocalStorage<{ scope: StatementScope; log: StatementLog }>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  const wait = Warehouse.prototype.wait;
  Warehouse.prototype.wait = async function (this: Warehouse, id: string, name: string) {
    const outcome = await wait.call(this, id, name);
    const context = scopes.getStore();
    if (context) {
      context.log.names.push(name);
      if (context.scope.failAt === context.log.names.length) {
        context.log.fired = true;
        await context.scope.onFault?.();
        throw new InjectedFault(`injected after statement ${context.log.names.length} (${name}) ended`);
      }
    }
    return outcome;
  };
  const submitBatch = Warehouse.prototype.submitBatch;
  Warehouse.prototype.submitBatch = async function (this: Warehouse, sqls: readonly string[], name: string, parameters?: Readonly<Record<string, string>>) {
    const before = scopes.getStore()?.scope.beforeBatch;
    if (before && name.includes(before.match)) await before.hook();
    return submitBatch.call(this, sqls, name, parameters);
  };
}

export interface StatementCounter {
  /** Runs `fn` (a task's invocation) with statements counted, and the fault of `scope` armed; returns its log too. */
  within<T>(scope: StatementScope, fn: () => Promise<T>, log?: StatementLog): Promise<T>;
}

export function statementCounter(): StatementCounter {
  install();
  return {
    within: (scope, fn, log = { names: [], fired: false }) => scopes.run({ scope, log }, fn),
  };
}
