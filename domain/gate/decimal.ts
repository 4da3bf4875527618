/**
 * Exact arithmetic on decimal texts as the warehouse returns NUMERIC values
 * (`-12.50`, `45176850.00`): sums of 38 digits do not fit a JavaScript
 * number, so they are compared and subtracted as scaled BigInts.
 */

const DECIMAL = /^(-?)(\d*)(?:\.(\d*))?$/;

/** A decimal text as an integer and its scale (digits after the point); undefined when it is not one. */
function parse(text: string): { value: bigint; scale: number } | undefined {
  const m = DECIMAL.exec(text.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const fraction = m[3] ?? '';
  const value = BigInt(`${m[2] || '0'}${fraction}`);
  return { value: m[1] === '-' ? -value : value, scale: fraction.length };
}

function rescale(n: { value: bigint; scale: number }, scale: number): bigint {
  return n.value * 10n ** BigInt(scale - n.scale);
}

function format(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const text = scale > 0 ? `${whole}.${digits.slice(digits.length - scale)}` : whole;
  return negative ? `-${text}` : text;
}

/** `a - b` at the larger of their scales; undefined when either is not a decimal text. */
export function decimalDifference(a: string, b: string): string | undefined {
  const x = parse(a);
  const y = parse(b);
  if (x === undefined || y === undefined) return undefined;
  const scale = Math.max(x.scale, y.scale);
  return format(rescale(x, scale) - rescale(y, scale), scale);
}

/** `a + b` at the larger of their scales; undefined when either is not a decimal text. */
export function decimalSum(a: string, b: string): string | undefined {
  const x = parse(a);
  const y = parse(b);
  if (x === undefined || y === undefined) return undefined;
  const scale = Math.max(x.scale, y.scale);
  return format(rescale(x, scale) + rescale(y, scale), scale);
}

/** True when two decimal texts stand for the same number (`10.50` and `10.5`); texts that are not decimals compare as texts. */
export function decimalEqual(a: string, b: string): boolean {
  const difference = decimalDifference(a, b);
  return difference === undefined ? a === b : /^-?[0.]*$/.test(difference);
}
