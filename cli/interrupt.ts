/**
 * Ctrl-C (SIGINT, or SIGTERM) while a command runs: bin/atomic-publish.ts aborts
 * CliIo.signal; a command that owns the interrupt (following an execution,
 * `local up`) handles it, any other ends 130 at once, having started nothing. A
 * second Ctrl-C ends the process. docs/decisions/ctrl-c-while-following.md
 */

/** Shows the cursor and turns line wrapping back on: what a progress bar turned off (cli-progress hideCursor, linewrap). */
export const RESTORE_TERMINAL = '\x1b[?25h\x1b[?7h';

export class Interrupt {
  private owners = 0;
  /** Resolves on an interrupt that no command owns: the command ends at once. */
  readonly unowned: Promise<void>;

  constructor(readonly signal: AbortSignal | undefined) {
    this.unowned = new Promise((resolve) => {
      if (!signal) return;
      const interrupted = () => {
        if (this.owners === 0) resolve();
      };
      if (signal.aborted) interrupted();
      else signal.addEventListener('abort', interrupted, { once: true });
    });
  }

  /** Whether Ctrl-C has come. */
  get interrupted(): boolean {
    return this.signal?.aborted === true;
  }

  /** Resolves when Ctrl-C comes (never without a signal). */
  whenInterrupted(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.signal) return;
      if (this.signal.aborted) resolve();
      else this.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  /** Runs `fn`, which handles an interrupt itself: until it ends, an interrupt does not end the command at once. */
  async owning<T>(fn: () => Promise<T>): Promise<T> {
    this.owners += 1;
    try {
      return await fn();
    } finally {
      this.owners -= 1;
    }
  }
}
