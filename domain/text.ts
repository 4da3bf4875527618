/**
 * Bounded text: what an error message, a log line, a manifest column or an
 * alert may carry of a value from outside. An execution input or a database
 * error can be megabytes long; what echoes it stays small.
 */

/** Characters of an outside value an error message quotes before cutting it. */
export const ECHO_MAX_CHARS = 200;

/**
 * An outside value as a message quotes it: its JSON (or its text where JSON
 * has none), cut to `maxChars` with an ellipsis and the full length.
 * `echo('x'.repeat(1e6))` is `"xxx…xxx... (1000002 characters)`.
 */
export function echo(value: unknown, maxChars = ECHO_MAX_CHARS): string {
  return clip(render(value), maxChars);
}

/** Text from outside cut to `maxChars` characters (never inside a surrogate pair), saying how long it was. */
export function clip(text: string, maxChars = ECHO_MAX_CHARS): string {
  if (text.length <= maxChars) return text;
  const end = isHighSurrogate(text.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return `${text.slice(0, end)}... (${text.length} characters)`;
}

/**
 * Text from the warehouse as the manifest records it: a backslash or a
 * control character shown as `?` (a SQL literal refuses them,
 * identifiers.ts sqlLiteral).
 */
export function printable(text: string): string {
  return text.replace(/[\\\u0000-\u001f]/g, '?');
}

/** Text cut to at most `maxBytes` of UTF-8, saying how long it was; the result, note included, fits `maxBytes`. */
export function clipUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return text;
  const note = `... (${bytes} bytes in all)`;
  return truncateUtf8(text, Math.max(0, maxBytes - note.length)) + note;
}

/**
 * Text cut so that its JSON string (quotes and escapes included, as it
 * travels inside a JSON document) is at most `maxBytes` of UTF-8, saying
 * how long it was. A quote or a control character takes 2 to 6 bytes there.
 */
export function clipJsonUtf8(text: string, maxBytes: number): string {
  const encoded = (t: string) => Buffer.byteLength(JSON.stringify(t), 'utf8');
  if (encoded(text) <= maxBytes) return text;
  const note = `... (${Buffer.byteLength(text, 'utf8')} bytes in all)`;
  const head = (chars: number) => text.slice(0, chars > 0 && isHighSurrogate(text.charCodeAt(chars - 1)) ? chars - 1 : chars);
  // The longest head whose encoding, with the note, fits.
  let fits = 0;
  let tooLong = Math.min(text.length, maxBytes) + 1;
  while (tooLong - fits > 1) {
    const mid = Math.floor((fits + tooLong) / 2);
    if (encoded(head(mid) + note) <= maxBytes) fits = mid;
    else tooLong = mid;
  }
  return head(fits) + note;
}

/** Cuts text to at most `maxBytes` of UTF-8 (Redshift measures varchar in bytes) without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char, 'utf8');
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

function render(value: unknown): string {
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // a BigInt or a cycle: fall back to its text
  }
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
