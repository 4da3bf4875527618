// What GitHub makes of a markdown file's headings and links, for the tests
// that keep the docs true: the anchor of every heading, and every relative
// link outside code.

/**
 * GitHub's anchor of a heading (github-slugger): lower case, every
 * character that is not a letter, a digit, a space, `-` or `_` dropped,
 * each space made `-`. Links in the heading count by their text.
 */
export function githubSlug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The lines of `text` outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): { line: string; number: number }[] {
  const lines: { line: string; number: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || marker.startsWith(fence))) {
      fence = fence ? undefined : marker;
      return;
    }
    if (!fence) lines.push({ line, number: i + 1 });
  });
  return lines;
}

/** Every anchor a heading of `text` gives, a repeated one suffixed `-1`, `-2`... as GitHub does. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

export interface MarkdownLink {
  readonly target: string;
  readonly line: number;
}

/** The links `[text](target)` of `text` outside code (fenced blocks and inline spans), images included. */
export function markdownLinks(text: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, number } of proseLines(text)) {
    const prose = line.replace(/(`+)[^`]*?\1/g, '');
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1]!, line: number });
  }
  return links;
}
