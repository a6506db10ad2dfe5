// CSV and TSV for tables: sniffing the delimiter, turning headers into column names, inferring column types from
// the first rows, and reading one cell's text as a typed value (or saying why it cannot be). Parsing itself is
// csv-parse's, streamed.
import { type Column, type ColumnType, type StoredValue, COLUMN_NAME, MAX_COLUMN_NAME, parseDate, toStored, ColumnError } from './columns.ts';
import { SYSTEM_FIELDS } from './predicate.ts';

export const DELIMITERS = [',', ';', '\t', '|'] as const;
/** Rows read to infer the column types of a new table. */
export const INFER_ROWS = 100;
/** Longest record the parser accepts. */
export const MAX_RECORD_BYTES = 1024 * 1024;

/**
 * The delimiter of a CSV from its first bytes: the candidate that splits the first lines (outside quotes) into
 * the same, largest number of fields. Comma when nothing else does better.
 */
export function sniffDelimiter(head: string): string {
  const lines: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of head.replace(/^\ufeff/, '')) {
    if (ch === '"') quoted = !quoted;
    if (!quoted && (ch === '\n' || ch === '\r')) {
      if (current.length > 0) lines.push(current);
      current = '';
      if (lines.length >= 10) break;
      continue;
    }
    current += ch;
  }
  if (current.length > 0 && lines.length < 10) lines.push(current);
  let best: string = ',';
  let bestScore = 0;
  for (const d of DELIMITERS) {
    const counts = lines.map((l) => {
      let n = 0;
      let q = false;
      for (const ch of l) {
        if (ch === '"') q = !q;
        else if (!q && ch === d) n++;
      }
      return n;
    });
    if (counts.length === 0 || counts[0] === 0) continue;
    const consistent = counts.filter((c) => c === counts[0]).length;
    const score = counts[0]! * consistent;
    if (score > bestScore) {
      best = d;
      bestScore = score;
    }
  }
  return best;
}

/** Column names for CSV headers: letters, digits and underscores, distinct, never a system field. */
export function columnNamesFor(headers: string[]): string[] {
  const used = new Set<string>();
  return headers.map((h, i) => {
    let name = h.trim().replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '').slice(0, MAX_COLUMN_NAME);
    if (name === '') name = `column_${i + 1}`;
    if (/^[0-9]/.test(name)) name = `_${name}`.slice(0, MAX_COLUMN_NAME);
    if ((SYSTEM_FIELDS as readonly string[]).includes(name)) name = `${name}_`;
    let candidate = name;
    for (let n = 2; used.has(candidate); n++) candidate = `${name.slice(0, MAX_COLUMN_NAME - String(n).length - 1)}_${n}`;
    used.add(candidate);
    if (!COLUMN_NAME.test(candidate)) throw new Error(`Unusable column name ${candidate}`);
    return candidate;
  });
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const BOOLEAN = /^(true|false)$/i;

/** The type of a column from sample values: number, boolean, date, or string when the values disagree. */
export function inferType(samples: string[]): ColumnType {
  const values = samples.map((s) => s.trim()).filter((s) => s !== '');
  if (values.length === 0) return 'string';
  if (values.every((v) => NUMBER.test(v))) return 'number';
  if (values.every((v) => BOOLEAN.test(v))) return 'boolean';
  if (values.every((v) => /^\d{4}-\d{2}-\d{2}/.test(v) && parseDate(v) !== null)) return 'date';
  return 'string';
}

/** Wall-clock date-times without a zone, read in an IANA time zone (for imports that name one). */
function inZone(text: string, timeZone: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00'] = m;
  const asUtc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  // The zone's offset at that instant, from how the zone writes it; one correction step handles DST edges.
  const offsetAt = (t: number) => {
    const parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }).formatToParts(new Date(t));
    const get = (k: string) => Number(parts.find((p) => p.type === k)!.value);
    return Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second')) - t;
  };
  let t = asUtc - offsetAt(asUtc);
  t = asUtc - offsetAt(t);
  return new Date(t).toISOString();
}

let lastDate: { text: string; zone: string | undefined; value: string } = { text: '', zone: undefined, value: '' };

/** One CSV cell as the stored value of its column; empty text is an empty cell. Throws ColumnError. */
export function cellFromText(column: Column, text: string, timeZone?: string): StoredValue {
  const t = text.trim();
  if (t === '' && column.type !== 'string') return null;
  switch (column.type) {
    case 'string':
      return text === '' ? null : text;
    case 'number':
    case 'currency':
    case 'ttl':
      if (!NUMBER.test(t)) throw new ColumnError(`"${text}" is not a number.`);
      return toStored(column, Number(t), []);
    case 'boolean': {
      const v = t.toLowerCase();
      if (['true', '1', 'yes', 'y'].includes(v)) return 1;
      if (['false', '0', 'no', 'n'].includes(v)) return 0;
      throw new ColumnError(`"${text}" is not true or false.`);
    }
    case 'date': {
      // Columns of dates repeat values a lot; the last one read is kept.
      if (t === lastDate.text && timeZone === lastDate.zone) return lastDate.value;
      const zoned = timeZone ? inZone(t, timeZone) : null;
      const d = zoned ?? parseDate(t);
      if (d === null) throw new ColumnError(`"${text}" is not an ISO 8601 date.`);
      lastDate = { text: t, zone: timeZone, value: d };
      return d;
    }
    case 'json': {
      try {
        return JSON.stringify(JSON.parse(t));
      } catch {
        return JSON.stringify(text);
      }
    }
    case 'select':
      return toStored(column, column.multiple ? t.split(/\s*[,;|]\s*/).filter(Boolean) : t, []);
  }
}

export function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
