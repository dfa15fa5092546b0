/**
 * CSV of the rows shown (audit records or engine events): the first row's keys are the columns;
 * objects are written as JSON, null as an empty cell, and a cell with a comma, quote or newline is quoted.
 */
export function toCsv(rows: readonly object[]): string {
  if (rows.length === 0) return '';
  const keys = Object.keys(rows[0]!);
  const cell = (v: unknown) => {
    const s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [keys.join(','), ...rows.map((r) => keys.map((k) => cell((r as Record<string, unknown>)[k])).join(','))].join(
    '\n',
  );
}
