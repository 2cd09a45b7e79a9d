/**
 * The report's two borrowings from the panel, one function each, so that the panel's chart and highlighter can be
 * replaced in one place: the performance chart as an SVG string, and CUDA highlighting as tokens per line.
 */
import { buildChart, type ChartInput } from '../chart';
import { tokenizeLines, type Token } from '../cuda-tokens';

/** The panel's performance chart (time per accepted step, the configurations of a step) as SVG markup. */
export function chartSvg(input: ChartInput): string {
  return buildChart(input).svg;
}

/** CUDA highlighting of consecutive lines of one text: each line's tokens, with a kind for the CSS class `tok-<kind>`. */
export function highlightLines(lines: readonly string[]): Token[][] {
  return tokenizeLines(lines);
}
