import { describe, expect, it } from 'vitest';
import { sectionBegin, sectionEnd, withSection } from '../../local/results-file.ts';

describe('withSection', () => {
  it('adds a section after the header of a new file, then replaces only its own section', () => {
    const first = withSection('', 'bench', 'npm run bench', 'table one\n');
    expect(first).toMatch(/^# Measured results\n/);
    expect(first.endsWith(`${sectionBegin('bench', 'npm run bench')}\ntable one\n${sectionEnd('bench')}\n`)).toBe(true);

    const both = withSection(first, 'demo', 'npm start', 'took 60 s');
    const again = withSection(both, 'bench', 'npm run bench', 'table two');
    expect(again).toContain(`${sectionBegin('bench', 'npm run bench')}\ntable two\n${sectionEnd('bench')}`);
    expect(again).not.toContain('table one');
    expect(again).toContain(`${sectionBegin('demo', 'npm start')}\ntook 60 s\n${sectionEnd('demo')}`);
    expect(again.indexOf('table two')).toBeLessThan(again.indexOf('took 60 s'));
  });
});
