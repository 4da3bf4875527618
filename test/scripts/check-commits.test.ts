// npm run check:commits: which subjects of `git log --format=%H%x09%s` are
// too long, and what the log walks with and without the baseline commit.
import { describe, expect, it } from 'vitest';
import { longSubjects, MAX_SUBJECT_LENGTH, revisions, SUBJECTS_CHECKED_AFTER } from '../../scripts/check-commits.ts';

const HASH = 'a'.repeat(40);

describe('longSubjects', () => {
  it('keeps the subjects longer than 72 characters, with their hash and length', () => {
    const fits = 'x'.repeat(MAX_SUBJECT_LENGTH);
    const long = 'y'.repeat(MAX_SUBJECT_LENGTH + 1);
    expect(longSubjects(`${HASH}\t${fits}\n${'b'.repeat(40)}\t${long}\n`)).toEqual([{ hash: 'b'.repeat(40), length: 73, subject: long }]);
  });

  it('counts characters, not bytes, and keeps a tab inside the subject', () => {
    expect(longSubjects(`${HASH}\t${'é'.repeat(MAX_SUBJECT_LENGTH)}\n`)).toEqual([]);
    expect(longSubjects(`${HASH}\ta\tb`, 2)).toEqual([{ hash: HASH, length: 3, subject: 'a\tb' }]);
  });

  it('reads an empty log as no subjects', () => {
    expect(longSubjects('')).toEqual([]);
  });
});

describe('revisions', () => {
  it('walks HEAD less the baseline where the clone has it, else everything the clone holds', () => {
    expect(revisions(true)).toEqual(['HEAD', '--not', SUBJECTS_CHECKED_AFTER]);
    expect(revisions(false)).toEqual(['HEAD']);
  });
});
