// Redshift's date and time part names and abbreviations, as DATEADD,
// DATEDIFF, DATE_PART, EXTRACT and DATE_TRUNC take them ("Date parts for
// date or timestamp functions",
// https://docs.aws.amazon.com/redshift/latest/dg/r_Dateparts_for_datetime_functions.html):
// each name by the unit it stands for. `m` is a minute, not a month.

/** Units by their names; a unit's own name is one of its names. */
export const DATE_PARTS: Readonly<Record<string, readonly string[]>> = {
  millennium: ['millennium', 'millennia', 'mil', 'mils'],
  century: ['century', 'centuries', 'c', 'cent', 'cents'],
  decade: ['decade', 'decades', 'dec', 'decs'],
  epoch: ['epoch'],
  year: ['year', 'years', 'y', 'yr', 'yrs'],
  quarter: ['quarter', 'quarters', 'qtr', 'qtrs'],
  month: ['month', 'months', 'mon', 'mons'],
  week: ['week', 'weeks', 'w'],
  dow: ['dayofweek', 'dow', 'dw', 'weekday'],
  doy: ['dayofyear', 'doy', 'dy', 'yearday'],
  day: ['day', 'days', 'd'],
  hour: ['hour', 'hours', 'h', 'hr', 'hrs'],
  minute: ['minute', 'minutes', 'm', 'min', 'mins'],
  second: ['second', 'seconds', 's', 'sec', 'secs'],
  millisecond: ['millisecond', 'milliseconds', 'ms', 'msec', 'msecs', 'msecond', 'mseconds', 'millisec', 'millisecs', 'millisecon'],
  microsecond: ['microsecond', 'microseconds', 'microsec', 'microsecs', 'usecond', 'useconds', 'us', 'usec', 'usecs'],
  timezone: ['timezone'],
  timezone_hour: ['timezone_hour'],
  timezone_minute: ['timezone_minute'],
};

/** Every name of every unit, lower case: the words a bare first argument may be. */
export const DATE_PART_NAMES: ReadonlySet<string> = new Set(Object.values(DATE_PARTS).flat());

/** A SQL CASE mapping the lower-cased text `expr` to its unit, NULL when it names none. */
export function unitCase(expr: string): string {
  const arms = Object.entries(DATE_PARTS).map(([unit, names]) => `WHEN ${expr} IN (${names.map((n) => `'${n}'`).join(', ')}) THEN '${unit}'`);
  return `CASE ${arms.join(' ')} END`;
}
