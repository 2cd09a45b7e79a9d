// The HTML report of `tune` and `auto`: where it goes, what reproduces it, and writing it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { renderReportHtml } from '../report/html';
import type { ReportData } from '../report/model';
import { shellQuote } from './format';

/** The report's path: `--report FILE` when given, else `fallback`; null with --no-report. */
export function reportPath(values: { report?: string | undefined; 'no-report'?: boolean | undefined }, fallback: string): string | null {
  if (values['no-report']) {
    if (values.report !== undefined) throw new Error('--report and --no-report contradict each other: give one');
    return null;
  }
  return resolve(values.report ?? fallback);
}

/** The command line that reruns this command, as the user called it (the --report flag included). */
export function commandLine(command: string, args: readonly string[]): string {
  return ['llm-kernel-tuner', command, ...args].map(shellQuote).join(' ');
}

export function writeReport(path: string, data: ReportData): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, renderReportHtml(data));
}
