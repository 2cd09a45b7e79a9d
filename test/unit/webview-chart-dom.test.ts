// The performance chart as the panel mounts it, in Chromium (playwright-core, Debian's chromium; skipped where it is not
// installed), under the panel's kind of CSP: a branch's chart with the session it branched from beside it, that
// session's line in the theme's colour, its steps above the branch's own, named in the legend, the caption and the
// tooltips read from the keyboard.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChartData } from '../../webview/chart-series';
import { bundleForPage, hasChromium, launchChromium, pageUnderCsp } from '../support/chromium-page';

const PARENT = 'the session it branched from';
const data: ChartData = {
  timeline: [
    { label: 'baseline', timeMs: 2 },
    { label: 'Vectorise', timeMs: 1.6 },
  ],
  others: [
    {
      label: PARENT,
      timeline: [
        { label: 'baseline', timeMs: 2 },
        { label: 'Tile', timeMs: 1 },
        { label: 'Unroll', timeMs: 0.5 },
      ],
    },
  ],
  configs: [
    { key: '128', config: { block_size_x: 128 }, status: 'ok', timeMs: 1.6 },
    { key: '256', config: { block_size_x: 256 }, status: 'ok', timeMs: 1.7 },
  ],
  stepTitle: 'Vectorise',
};

interface DatasetProbe {
  label: string;
  colour: string;
  dash: number[] | null;
  xs: number[];
}

describe.skipIf(!hasChromium)('performance chart in Chromium', () => {
  let browser: Browser;
  let script: string;
  beforeAll(async () => {
    const entry = `import { Chart } from 'chart.js';
      import { mountPerformanceChart } from './webview/chart';
      const holder = document.createElement('div');
      holder.className = 'chart-holder';
      document.body.append(holder);
      mountPerformanceChart(holder, ${JSON.stringify(data)});
      const chart = Chart.getChart(holder.querySelector('canvas'));
      window.probe = () => ({
        datasets: chart.data.datasets.map((d, i) => ({ label: d.label, colour: d.borderColor, dash: d.borderDash ?? null, xs: chart.getDatasetMeta(i).data.map((p) => Math.round(p.x)) })),
        legend: chart.legend.legendItems.map((item) => item.text),
      });`;
    script = await bundleForPage(entry);
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => browser?.close());

  it("draws the related session's steps on the branch's step axis, in the theme's colour, named in the legend, the caption and the tooltips", async () => {
    const css = readFileSync(join(__dirname, '..', '..', 'media', 'chart-and-code.css'), 'utf8');
    const { page, problems } = await pageUnderCsp(browser, script, { style: `:root { --vscode-charts-purple: #8250df; --vscode-charts-blue: #0969da; } ${css}`, viewport: { width: 1000, height: 600 } });
    const { datasets, legend } = (await page.evaluate('window.probe()')) as { datasets: DatasetProbe[]; legend: string[] };
    const own = datasets.find((d) => d.label === 'Time per accepted step')!;
    const parent = datasets.find((d) => d.label === PARENT)!;
    expect(own.colour).toBe('#0969da');
    expect(parent).toMatchObject({ colour: '#8250df', dash: [5, 3] });
    // Step i of both series at the same x; the parent's step 2 further right, where the branch has none.
    expect(parent.xs.slice(0, 2)).toEqual(own.xs);
    expect(parent.xs[2]).toBeGreaterThan(own.xs[1]!);
    expect(legend).toContain(PARENT);
    expect(await page.locator('.chart-summary').textContent()).toContain(`beside it, ${PARENT}: 2 accepted step(s), now 500 µs`);

    // From the keyboard: the branch's two steps, then the parent's, each tooltip naming the session.
    await page.focus('canvas');
    const title = page.locator('.chart-tooltip-title');
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
    expect(await title.textContent()).toBe(`Baseline (original kernel) — ${PARENT}`);
    await page.keyboard.press('ArrowRight');
    expect(await title.textContent()).toBe(`Step 1: Tile — ${PARENT}`);
    expect(await page.locator('.chart-tooltip').textContent()).toContain('Speed-up: 2.00× vs baseline');
    expect(problems).toEqual([]);
  });
});
