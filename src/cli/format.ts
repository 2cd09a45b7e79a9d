// Plain-text output helpers of the CLI: aligned tables, times and shell words (the progress bar is progress.ts).

/** Columns padded to their widest cell; numbers (cells that parse as one) are right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => /^-?[\d.]+(e[-+]?\d+)?( ?[a-zA-Z%/x]+)?$/.test(r[i] ?? '')));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n') + '\n';
}

/** Milliseconds with 4 significant digits, as the tables show them. */
export function ms(value: number | undefined): string {
  return value === undefined ? '' : value.toPrecision(4);
}

/** A word as a POSIX shell reads it back: plain when it can be, else in single quotes. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
