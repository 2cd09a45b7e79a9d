/**
 * The performance chart as an SVG string (no library, nothing remote, CSP-safe: colours come from CSS classes that
 * use the theme's variables, never from style attributes). Left: time per accepted step against the baseline. Right:
 * the times of the configurations of the current step, one dot each, failures marked on the axis. Pure, unit-tested.
 */
export interface ChartInput {
  /** baseline first, then every accepted step. */
  timeline: { label: string; timeMs: number }[];
  /** The same series of related sessions (the one this one branched from, its branches), drawn beside it. */
  others?: { label: string; timeline: { label: string; timeMs: number }[] }[];
  /** The configurations of the step the chart follows. */
  configs: { key: string; timeMs?: number; failed: boolean }[];
  stepTitle?: string;
  width: number;
  height: number;
}

export interface ChartLayout {
  svg: string;
  /** Plotted points (for tests): x/y in SVG units. */
  timelinePoints: { x: number; y: number; label: string; timeMs: number }[];
  configPoints: { x: number; y: number; key: string }[];
  failedCount: number;
  /** Plotted points of each related session's series, in the order given. */
  otherPoints: { label: string; points: { x: number; y: number }[] }[];
}

const PAD = { left: 56, right: 12, top: 22, bottom: 34 };

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function formatTime(ms: number): string {
  if (ms >= 1000) return `${Number((ms / 1000).toPrecision(3))} s`;
  if (ms >= 1) return `${Number(ms.toPrecision(3))} ms`;
  return `${Number((ms * 1000).toPrecision(3))} µs`;
}

/** Round axis bounds: 0 up to a "nice" number above the largest value. */
export function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const exp = Math.pow(10, Math.floor(Math.log10(value)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * exp >= value) return m * exp;
  return 10 * exp;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function buildChart(input: ChartInput): ChartLayout {
  const { width, height } = input;
  const gap = 24;
  const innerW = width - PAD.left - PAD.right;
  const leftW = Math.max(80, Math.round((innerW - gap) * 0.55));
  const rightX = PAD.left + leftW + gap;
  const rightW = width - PAD.right - rightX;
  const plotH = height - PAD.top - PAD.bottom;
  const others = input.others ?? [];
  const times = [...input.timeline.map((p) => p.timeMs), ...others.flatMap((o) => o.timeline.map((p) => p.timeMs)), ...input.configs.flatMap((c) => (c.timeMs !== undefined && !c.failed ? [c.timeMs] : []))];
  const yMax = niceMax(Math.max(0, ...times));
  const y = (ms: number) => PAD.top + plotH - (ms / yMax) * plotH;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Kernel time per accepted step and per configuration">`);
  // Y axis with 4 ticks, shared by both plots.
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    const yy = y(v).toFixed(1);
    parts.push(`<line class="grid" x1="${PAD.left}" x2="${width - PAD.right}" y1="${yy}" y2="${yy}"/>`);
    parts.push(`<text class="tick" x="${PAD.left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">${escapeXml(formatTime(v))}</text>`);
  }
  parts.push(`<text class="title" x="${PAD.left}" y="14">Time per accepted step</text>`);
  // About 6.5 px per character at the title's 12 px.
  const titleChars = Math.max(12, Math.floor(rightW / 6.5));
  parts.push(`<text class="title" x="${rightX}" y="14">${escapeXml(truncate(input.stepTitle ? `Configurations: ${input.stepTitle}` : 'Configurations', titleChars))}</text>`);

  const timelinePoints: ChartLayout['timelinePoints'] = [];
  const n = input.timeline.length;
  // Every series on one step axis: step i of a branch stands above step i of its parent.
  const steps = Math.max(n, ...others.map((o) => o.timeline.length));
  const x = (i: number) => PAD.left + (steps <= 1 ? leftW / 2 : (i * leftW) / (steps - 1));
  const otherPoints = others.map((o, k) => {
    const points = o.timeline.map((p, i) => ({ x: x(i), y: y(p.timeMs) }));
    if (points.length > 1) parts.push(`<polyline class="line other other-${k % 4}" points="${points.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')}"><title>${escapeXml(o.label)}</title></polyline>`);
    o.timeline.forEach((p, i) => parts.push(`<circle class="point other other-${k % 4}" cx="${points[i]!.x.toFixed(1)}" cy="${points[i]!.y.toFixed(1)}" r="3"><title>${escapeXml(`${o.label}, ${p.label}: ${formatTime(p.timeMs)}`)}</title></circle>`));
    return { label: o.label, points };
  });
  if (n > 0) {
    const baseline = input.timeline[0]!.timeMs;
    parts.push(`<line class="baseline" x1="${PAD.left}" x2="${PAD.left + leftW}" y1="${y(baseline).toFixed(1)}" y2="${y(baseline).toFixed(1)}"/>`);
    input.timeline.forEach((p, i) => timelinePoints.push({ x: x(i), y: y(p.timeMs), label: p.label, timeMs: p.timeMs }));
    if (n > 1) parts.push(`<polyline class="line" points="${timelinePoints.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')}"/>`);
    timelinePoints.forEach((p, i) => {
      parts.push(`<circle class="${i === 0 ? 'point base' : 'point'}" cx="${p.x.toFixed(1)}" cy="${p.y.toFixed(1)}" r="4"><title>${escapeXml(`${p.label}: ${formatTime(p.timeMs)}`)}</title></circle>`);
      parts.push(`<text class="label" x="${p.x.toFixed(1)}" y="${height - PAD.bottom + 14}" text-anchor="middle">${escapeXml(i === 0 ? 'baseline' : `step ${i}`)}</text>`);
    });
  } else {
    parts.push(`<text class="empty" x="${PAD.left + leftW / 2}" y="${PAD.top + plotH / 2}" text-anchor="middle">waiting for the baseline</text>`);
  }

  const configPoints: ChartLayout['configPoints'] = [];
  const timed = input.configs.filter((c) => c.timeMs !== undefined && !c.failed);
  const failedCount = input.configs.length - timed.length;
  if (input.configs.length > 0) {
    const m = input.configs.length;
    const x = (i: number) => rightX + (m === 1 ? rightW / 2 : (i * rightW) / (m - 1));
    if (n > 0) {
      const by = y(input.timeline[0]!.timeMs).toFixed(1);
      parts.push(`<line class="baseline" x1="${rightX}" x2="${rightX + rightW}" y1="${by}" y2="${by}"/>`);
    }
    input.configs.forEach((c, i) => {
      if (c.timeMs !== undefined && !c.failed) {
        configPoints.push({ x: x(i), y: y(c.timeMs), key: c.key });
        parts.push(`<circle class="config" cx="${x(i).toFixed(1)}" cy="${y(c.timeMs).toFixed(1)}" r="3"><title>${escapeXml(`${c.key}: ${formatTime(c.timeMs)}`)}</title></circle>`);
      } else {
        const fy = PAD.top + plotH;
        parts.push(`<path class="failed" d="M${(x(i) - 3).toFixed(1)},${(fy - 3).toFixed(1)} l6,6 m0,-6 l-6,6"><title>${escapeXml(`${c.key}: failed`)}</title></path>`);
      }
    });
    parts.push(`<text class="label" x="${rightX + rightW / 2}" y="${height - PAD.bottom + 14}" text-anchor="middle">${m} tried${failedCount ? `, ${failedCount} failed (×)` : ''}</text>`);
  } else {
    parts.push(`<text class="empty" x="${rightX + rightW / 2}" y="${PAD.top + plotH / 2}" text-anchor="middle">no configurations yet</text>`);
  }
  const related = others.length > 0 ? `  ○ ${others.map((o) => o.label).join(', ')}` : '';
  parts.push(`<text class="legend" x="${PAD.left}" y="${height - 6}">${escapeXml(`— baseline  ● accepted step  · configuration  × failed${related}`)}</text>`);
  parts.push('</svg>');
  return { svg: parts.join(''), timelinePoints, configPoints, failedCount, otherPoints };
}
