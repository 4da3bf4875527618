/**
 * `npm run check:commits`: no commit subject reachable from HEAD is longer
 * than 72 characters. Prints every one that is (hash, length, subject) and
 * exits 1; exits 2 when git cannot answer. A shallow clone is checked as far
 * as it reaches. The subjects up to SUBJECTS_CHECKED_AFTER are older than the
 * rule and stay as they were written: history is not rewritten.
 */
import { execFileSync } from 'node:child_process';
import { PROJECT_ROOT } from '../lib/project.ts';

export const MAX_SUBJECT_LENGTH = 72;

/** The newest commit whose subject breaks the rule: every commit after it is checked. */
export const SUBJECTS_CHECKED_AFTER = '8ac409385d49539d0ba20af674faa10024e13ced';

export interface LongSubject {
  readonly hash: string;
  readonly length: number;
  readonly subject: string;
}

/** The subjects of `git log --format=%H%x09%s` output longer than `max` characters (code points, not bytes). */
export function longSubjects(log: string, max = MAX_SUBJECT_LENGTH): LongSubject[] {
  return log
    .split('\n')
    .filter((line) => line !== '')
    .flatMap((line) => {
      const tab = line.indexOf('\t');
      const hash = tab < 0 ? line : line.slice(0, tab);
      const subject = tab < 0 ? '' : line.slice(tab + 1);
      const length = [...subject].length;
      return length > max ? [{ hash, length, subject }] : [];
    });
}

/** What `git log` walks: HEAD, less what the baseline reaches when this clone has the baseline. */
export function revisions(hasBaseline: boolean): string[] {
  return hasBaseline ? ['HEAD', '--not', SUBJECTS_CHECKED_AFTER] : ['HEAD'];
}

function git(args: string[]): string {
  return execFileSync('git', ['-C', PROJECT_ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });
}

function hasCommit(hash: string): boolean {
  try {
    git(['cat-file', '-e', `${hash}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const range = revisions(hasCommit(SUBJECTS_CHECKED_AFTER));
    const log = git(['log', '--format=%H%x09%s', ...range]);
    const checked = log.split('\n').filter((line) => line !== '').length;
    const long = longSubjects(log);
    if (long.length === 0) {
      process.stdout.write(`check:commits: ${checked} commit subjects, none longer than ${MAX_SUBJECT_LENGTH} characters\n`);
    } else {
      process.stderr.write(`check:commits: ${long.length} of ${checked} commit subjects are longer than ${MAX_SUBJECT_LENGTH} characters:\n`);
      for (const { hash, length, subject } of long) process.stderr.write(`${hash} (${length}) ${subject}\n`);
      process.exitCode = 1;
    }
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    process.stderr.write(`check:commits: git log failed: ${stderr || (error as Error).message}\n`);
    process.exitCode = 2;
  }
}
