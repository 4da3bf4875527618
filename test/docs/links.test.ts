// Every relative link of the README and docs/ leads somewhere: the file or
// folder it names exists, and its #anchor is a heading of that file by
// GitHub's rules. Links to the web are not followed.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/project.ts';
import { githubSlug, headingAnchors, markdownLinks } from '../support/markdown.ts';

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

const FILES = [join(PROJECT_ROOT, 'README.md'), ...markdownFiles(join(PROJECT_ROOT, 'docs'))];
const anchorsOf = new Map<string, Set<string>>();
const anchors = (file: string) => {
  if (!anchorsOf.has(file)) anchorsOf.set(file, headingAnchors(readFileSync(file, 'utf8')));
  return anchorsOf.get(file)!;
};

describe('githubSlug', () => {
  it('lower-cases, drops punctuation but - and _, and makes each space a -', () => {
    expect(githubSlug('Stack (`cdk.json` context or `-c`)')).toBe('stack-cdkjson-context-or--c');
    expect(githubSlug('Pipelines (`pipelines/*.ts`, listed in `pipelines/index.ts`)')).toBe('pipelines-pipelinests-listed-in-pipelinesindexts');
    expect(githubSlug('Rows with no time (`nullTimes`)')).toBe('rows-with-no-time-nulltimes');
    expect(githubSlug('The `run_keys` of a step')).toBe('the-run_keys-of-a-step');
  });

  it('gives a repeated heading the suffixes GitHub gives it', () => {
    expect([...headingAnchors('# A\n\n## A\n\n```\n# not a heading\n```\n\n### A\n')]).toEqual(['a', 'a-1', 'a-2']);
  });
});

describe('every relative link in README.md and docs/', () => {
  it('finds the markdown files', () => {
    expect(FILES.length).toBeGreaterThan(10);
  });

  for (const file of FILES) {
    const name = relative(PROJECT_ROOT, file);
    it(`${name}: names a file that exists and a heading it has`, () => {
      const broken: string[] = [];
      for (const { target, line } of markdownLinks(readFileSync(file, 'utf8'))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [path = '', anchor] = target.split('#', 2);
        const to = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        if (!existsSync(to)) {
          broken.push(`${name}:${line}: ${target}: no ${relative(PROJECT_ROOT, to)}`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(to).isDirectory() || !to.endsWith('.md')) {
          broken.push(`${name}:${line}: ${target}: an anchor into something that is not a markdown file`);
        } else if (!anchors(to).has(decodeURIComponent(anchor))) {
          broken.push(`${name}:${line}: ${target}: ${relative(PROJECT_ROOT, to)} has no heading #${anchor}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
