// The handler of the history tests' state machines: returns what it was
// given, and fails, as its input asks, every time (`fail`) or the first
// `failTimes` times it sees a `key`. Invoked through the optimized Lambda
// integration it gets `{ FunctionName, Payload }` and answers as Lambda's
// Invoke does, `{ StatusCode, Payload }`.
const failures = new Map<string, number>();

interface Work {
  n?: number;
  fail?: boolean;
  failTimes?: number;
  key?: string;
}

export function resetHistoryWork(): void {
  failures.clear();
}

export const handler = async (event: Work & { FunctionName?: string; Payload?: Work }) => {
  const invoked = event.FunctionName !== undefined;
  const work = (invoked ? event.Payload : event) ?? {};
  if (work.fail) throw Object.assign(new Error(`work ${work.n ?? ''} failed`), { name: 'WorkFailed' });
  if (work.failTimes !== undefined && work.key !== undefined) {
    const failed = failures.get(work.key) ?? 0;
    if (failed < work.failTimes) {
      failures.set(work.key, failed + 1);
      throw Object.assign(new Error(`attempt ${failed + 1} failed`), { name: 'WorkFlaked' });
    }
  }
  const result = { done: work.n ?? true };
  return invoked ? { StatusCode: 200, ExecutedVersion: '$LATEST', Payload: result } : result;
};
