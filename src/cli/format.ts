// Plain-text output helpers of the CLI: aligned tables and a one-line progress bar on stderr.

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

/** A progress bar redrawn in place on a terminal, or printed every few percent when stderr is a file. */
export class ProgressBar {
  private lastPrinted = -1;
  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  update(done: number, total: number, detail: string): void {
    const width = 24;
    const fraction = total > 0 ? Math.min(1, done / total) : 0;
    const filled = Math.round(fraction * width);
    const text = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${detail}`;
    if (this.stream.isTTY) {
      this.stream.write(`\r${text.slice(0, (this.stream.columns ?? 120) - 1)}\u001b[K`);
    } else {
      const step = Math.floor(fraction * 10);
      if (step !== this.lastPrinted || done === total) {
        this.lastPrinted = step;
        this.stream.write(`${text}\n`);
      }
    }
  }

  finish(): void {
    if (this.stream.isTTY) this.stream.write('\n');
  }
}
