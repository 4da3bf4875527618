// The README's record of the suite's length: a set of runs replaces the
// line of its own load, keeps the others, and creates the block if needed.
import { describe, expect, it } from 'vitest';
import { BEGIN, END, recordSuiteRuns, suiteLine } from '../../scripts/suite-length.ts';

const MACHINE = '2 cores (Example CPU), 24 GiB, Node v20.20.2';
const idle = { busy: 0, seconds: [431.6, 402.2, 455], green: 3, day: '2026-12-01', machine: MACHINE };
const loaded = { busy: 2, seconds: [801], green: 1, day: '2026-12-02', machine: MACHINE };

describe('suiteLine', () => {
  it('gives the load, the range in whole seconds, how many runs were green, the day and the machine', () => {
    expect(suiteLine(idle)).toBe(`- \`npm test\` with the cores otherwise idle: 402 to 455 s, 3 of 3 runs green (2026-12-01; ${MACHINE})`);
    expect(suiteLine(loaded)).toBe(`- \`npm test\` under 2 busy loops: 801 s, 1 of 1 run green (2026-12-02; ${MACHINE})`);
  });
});

describe('recordSuiteRuns', () => {
  it('adds the block at the end of a text without one', () => {
    expect(recordSuiteRuns('# Title\n\ntext\n', idle)).toBe(`# Title\n\ntext\n\n${BEGIN}\n${suiteLine(idle)}\n${END}\n`);
  });

  it("replaces its own load's line, keeps the other loads' lines, idle first, and leaves the text around alone", () => {
    const first = recordSuiteRuns(`before\n${BEGIN}\n${END}\nafter\n`, loaded);
    const both = recordSuiteRuns(first, idle);
    expect(both).toBe(`before\n${BEGIN}\n${suiteLine(idle)}\n${suiteLine(loaded)}\n${END}\nafter\n`);
    const again = recordSuiteRuns(both, { ...loaded, seconds: [700, 760], green: 1 });
    expect(again).toBe(`before\n${BEGIN}\n${suiteLine(idle)}\n${suiteLine({ ...loaded, seconds: [700, 760], green: 1 })}\n${END}\nafter\n`);
  });
});
