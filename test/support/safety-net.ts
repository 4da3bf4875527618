// How long a test, a hook, a wait for an observed event or a child process
// may take before it counts as hung: far above what any of them takes on a
// machine several times slower than the suite's, and busy. A time limit is
// only a safety net; no outcome depends on reaching it
// (docs/decisions/scale-proofs-in-the-bench.md).
export const SAFETY_NET_MS = 600_000;
