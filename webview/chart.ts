/**
 * The performance chart on the page: Chart.js on a canvas, an HTML tooltip, colours from the theme's CSS variables
 * (re-read when the theme changes), and PNG / SVG images of it. No webview API: the HTML report mounts it as it is.
 *
 * Why Chart.js (measured with esbuild --minify, see BENCHMARKS.md): the parts used here are 154 KB, ECharts' are
 * 570 KB; uPlot is 53 KB but draws only on a canvas, so no SVG. Chart.js draws through the 2D context API, so the SVG
 * image is the same drawing replayed into svgcanvas, a 2D context that writes SVG (25 KB). Neither uses eval or loads
 * anything remote, and both style elements through CSSOM only, which the panel's CSP allows (its style-src has no
 * 'unsafe-inline'); the one `setAttribute('style')` in svgcanvas is rewritten at bundling (scripts/build.mjs).
 */
import { BasicPlatform, Chart, Legend, LinearScale, LineElement, LogarithmicScale, PointElement, ScatterController, Tooltip, type ChartConfiguration, type Plugin } from 'chart.js';
import { Context as SvgContext } from 'svgcanvas';
import { chartConfig, chartSeries, DATASET, type ChartData, type ChartPoint, type ChartTheme, type ExternalTooltip } from './chart-series';

Chart.register(ScatterController, LineElement, PointElement, LinearScale, LogarithmicScale, Tooltip, Legend);

/** The chart's colours from the theme of `element`'s document; outside VS Code, from its own colours. */
export function readChartTheme(element: Element): ChartTheme {
  const css = getComputedStyle(element);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  const foreground = v('--vscode-foreground', css.color);
  return {
    foreground,
    muted: v('--vscode-descriptionForeground', foreground),
    // High-contrast themes define contrastBorder; the others leave it empty.
    grid: v('--vscode-contrastBorder', v('--vscode-editorWidget-border', 'rgba(128, 128, 128, 0.35)')),
    background: v('--vscode-editor-background', css.backgroundColor),
    line: v('--vscode-charts-blue', '#3794ff'),
    baseline: v('--vscode-charts-red', '#f14c4c'),
    config: v('--vscode-charts-green', '#388a34'),
    best: v('--vscode-charts-yellow', '#bf8803'),
    failed: v('--vscode-charts-orange', '#d18616'),
    others: [v('--vscode-charts-purple', '#b180d7'), v('--vscode-charts-orange', '#d18616'), v('--vscode-charts-green', '#388a34'), v('--vscode-charts-yellow', '#bf8803')],
    fontFamily: v('--vscode-font-family', css.fontFamily),
    fontSize: Number.parseFloat(v('--vscode-font-size', css.fontSize)) || 12,
  };
}

/**
 * Calls `onChange` when the colour theme changes: VS Code rewrites the CSS variables on <html> and the theme class on
 * <body>; a page outside VS Code follows the system's light/dark preference. Returns the function that stops it.
 */
export function onThemeChange(doc: Document, onChange: () => void): () => void {
  const observer = new MutationObserver(onChange);
  observer.observe(doc.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
  if (doc.body) observer.observe(doc.body, { attributes: true, attributeFilter: ['class'] });
  const media = doc.defaultView?.matchMedia('(prefers-color-scheme: dark)');
  media?.addEventListener('change', onChange);
  return () => {
    observer.disconnect();
    media?.removeEventListener('change', onChange);
  };
}

/** The exported image's size, whatever the size of the chart on screen. */
const EXPORT_SIZE = { width: 960, height: 420 };

/** Images get the theme's background (a canvas is transparent). */
function backgroundPlugin(colour: string): Plugin<'scatter'> {
  return {
    id: 'background',
    beforeDraw: (chart) => {
      chart.ctx.save();
      chart.ctx.fillStyle = colour;
      chart.ctx.fillRect(0, 0, chart.width, chart.height);
      chart.ctx.restore();
    },
  };
}

/**
 * The chart of `data` as an image, drawn off screen at a fixed size: a PNG data URL (at twice the pixels, for
 * high-density screens and print) or the text of an SVG document.
 */
export function renderChartImage(data: ChartData, theme: ChartTheme, format: 'png' | 'svg'): string {
  const config = chartConfig(chartSeries(data), theme);
  const options = { ...config.options, responsive: false, devicePixelRatio: format === 'png' ? 2 : 1 };
  const plugins = [backgroundPlugin(theme.background)];
  if (format === 'png') {
    const canvas = document.createElement('canvas');
    canvas.width = EXPORT_SIZE.width;
    canvas.height = EXPORT_SIZE.height;
    const chart = new Chart(canvas, { ...config, options, plugins, platform: BasicPlatform });
    const url = chart.toBase64Image('image/png');
    chart.destroy();
    return url;
  }
  const context = new SvgContext(EXPORT_SIZE);
  // Chart.js draws on `context.canvas`; svgcanvas points it at the context itself, which needs a getContext.
  const canvas = Object.assign(context, { getContext: () => context, style: {} });
  // svgcanvas cannot replay a Path2D: with a `segment` option (even empty) Chart.js draws lines with path calls.
  const datasets = config.data.datasets.map((d) => ({ ...d, segment: {} }));
  const chart = new Chart(canvas as unknown as HTMLCanvasElement, { ...config, data: { datasets }, options, plugins, platform: BasicPlatform } as ChartConfiguration<'scatter', ChartPoint[]>);
  const svg = context.getSerializedSvg(true);
  chart.destroy();
  return svg;
}

export interface PerformanceChart {
  update(data: ChartData): void;
  /** The chart as an image (see renderChartImage), in the current theme. */
  image(format: 'png' | 'svg'): string;
  destroy(): void;
}

function tooltipRenderer(box: HTMLElement): ExternalTooltip {
  return ({ tooltip }) => {
    const point = tooltip.dataPoints?.[0]?.raw as ChartPoint | undefined;
    if (tooltip.opacity === 0 || !point) {
      box.hidden = true;
      return;
    }
    const doc = box.ownerDocument;
    const title = doc.createElement('div');
    title.className = 'chart-tooltip-title';
    title.textContent = point.info.title;
    const rows = point.info.rows.map(([name, value]) => {
      const row = doc.createElement('div');
      const label = doc.createElement('span');
      label.className = 'chart-tooltip-label';
      label.textContent = `${name}: `;
      row.append(label, value);
      return row;
    });
    box.replaceChildren(title, ...rows);
    box.hidden = false;
    // Beside the point, on the side with more room.
    const canvas = tooltip.chart.canvas;
    const left = canvas.offsetLeft + tooltip.caretX;
    const flip = tooltip.caretX > canvas.clientWidth / 2;
    box.style.left = `${left}px`;
    box.style.top = `${canvas.offsetTop + tooltip.caretY}px`;
    box.style.transform = `translate(${flip ? 'calc(-100% - 12px)' : '12px'}, -50%)`;
  };
}

/**
 * The points can be read without a mouse: with the canvas focused, the arrow keys (and Home / End) move the tooltip
 * from point to point, steps first, then configurations in evaluation order; Escape hides it.
 */
function keyboardWalk(canvas: HTMLCanvasElement, chart: Chart<'scatter', ChartPoint[]>): void {
  canvas.tabIndex = 0;
  let at = -1;
  const points = () =>
    chart.data.datasets.flatMap((dataset, datasetIndex) =>
      dataset.label === DATASET.baseline || dataset.label === DATASET.best ? [] : dataset.data.map((_, index) => ({ datasetIndex, index })),
    );
  const show = (active: { datasetIndex: number; index: number }[]) => {
    const element = active[0] && chart.getDatasetMeta(active[0].datasetIndex).data[active[0].index];
    chart.setActiveElements(active);
    chart.tooltip?.setActiveElements(active, { x: element?.x ?? 0, y: element?.y ?? 0 });
    chart.update('none');
  };
  canvas.addEventListener('keydown', (event) => {
    const all = points();
    const moves: Record<string, number> = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: all.length - 1 };
    if (event.key === 'Escape') {
      at = -1;
      show([]);
    } else if (event.key in moves && all.length > 0) {
      at = Math.min(all.length - 1, Math.max(0, moves[event.key]!));
      show([all[at]!]);
    } else return;
    event.preventDefault();
  });
  canvas.addEventListener('blur', () => ((at = -1), show([])));
}

/**
 * Draws the chart of `data` into `holder` (emptied first) and keeps it in the page's theme. The canvas carries the
 * summary as its accessible name, repeated as a caption under it.
 */
export function mountPerformanceChart(holder: HTMLElement, data: ChartData): PerformanceChart {
  const doc = holder.ownerDocument;
  const frame = doc.createElement('div');
  frame.className = 'chart-canvas';
  const canvas = doc.createElement('canvas');
  canvas.setAttribute('role', 'img');
  const tooltip = doc.createElement('div');
  tooltip.className = 'chart-tooltip';
  tooltip.setAttribute('role', 'tooltip');
  tooltip.hidden = true;
  frame.append(canvas, tooltip);
  const caption = doc.createElement('p');
  caption.className = 'chart-summary';
  holder.replaceChildren(frame, caption);

  const external = tooltipRenderer(tooltip);
  let current = data;
  // The holder may not be in the page yet (no computed style): the variables are inherited from <body> anyway.
  const themeSource = () => (holder.isConnected ? holder : doc.body);
  let theme = readChartTheme(themeSource());
  const describe = (summary: string) => {
    canvas.setAttribute('aria-label', `Performance chart. ${summary} Arrow keys read the points one by one.`);
    caption.textContent = summary;
  };
  const build = () => {
    const series = chartSeries(current);
    describe(series.summary);
    return chartConfig(series, theme, external);
  };
  const chart = new Chart(canvas, build());
  keyboardWalk(canvas, chart);
  const redraw = () => {
    const config = build();
    chart.data = config.data;
    chart.options = config.options!;
    chart.update();
  };
  const stopWatching = onThemeChange(doc, () => {
    theme = readChartTheme(themeSource());
    redraw();
  });
  return {
    update(next) {
      current = next;
      redraw();
    },
    image: (format) => renderChartImage(current, theme, format),
    destroy() {
      stopWatching();
      chart.destroy();
    },
  };
}
