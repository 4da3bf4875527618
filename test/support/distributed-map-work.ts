// The handler of the distributed-map test's child workflow: sums a batch of
// numbers, fails on an item marked `fail`, and waits at a gate the test
// opens, so the test can observe how many children run at once.
export const observed = { running: 0, peak: 0, calls: 0 };
let gate: Promise<void> = Promise.resolve();

/** Holds every invocation until the returned function is called. */
export function hold(): () => void {
  let open!: () => void;
  gate = new Promise<void>((resolve) => (open = resolve));
  return open;
}

export function resetObserved(): void {
  Object.assign(observed, { running: 0, peak: 0, calls: 0 });
  gate = Promise.resolve();
}

export const handler = async (event: { Items: { n: number; fail?: boolean }[]; run?: string }) => {
  observed.calls += 1;
  observed.running += 1;
  observed.peak = Math.max(observed.peak, observed.running);
  try {
    await gate;
    if (event.Items.some((item) => item.fail)) throw Object.assign(new Error(`item failed in batch of ${event.Items.length}`), { name: 'ItemFailed' });
    return { run: event.run, sum: event.Items.reduce((total, item) => total + item.n, 0), count: event.Items.length };
  } finally {
    observed.running -= 1;
  }
};
