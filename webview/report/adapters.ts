/**
 * The report's two borrowings from the panel, one function each: the performance chart (Chart.js, with its tooltips
 * and keyboard reading) and CUDA highlighting (highlight.js), so the report and the panel look and read alike.
 */
import { mountPerformanceChart } from '../chart';
import type { ChartData } from '../chart-series';
import { highlightLines } from '../highlight-dom';

/** The panel's performance chart (time per accepted step, the configurations of a step), drawn into `holder`. */
export function mountChart(holder: HTMLElement, data: ChartData): void {
  mountPerformanceChart(holder, data);
}

/** CUDA highlighting of consecutive lines of one text (block comments carry across lines): one fragment per line. */
export function highlightedLines(lines: readonly string[]): DocumentFragment[] {
  return highlightLines(lines);
}
