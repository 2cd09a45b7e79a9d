// The HTML report of an evolutionary session (the recorded one, fake GPU): its population as tables (each variant with
// its parents, operator, time, speed-up and niche; the children kept out and why), and the model's tokens and cost.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TuningEvent } from '../../src/engine/progress/events';
import { reduceAll, type SessionHeader } from '../../src/engine/session/session-view';
import { renderReportHtml } from '../../src/report/html';
import { reportFromSession } from '../../src/report/model';
import { hasChromium, launchChromium } from '../support/chromium-page';

const root = join(__dirname, '..', '..');
const recorded = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'sessions', 'evolution-saxpy.fake-gpu.json'), 'utf8')) as { report: { header: SessionHeader; events: TuningEvent[] } };
const { header, events } = recorded.report;
const view = reduceAll(header, events);
const usage = events.filter((e) => e.type === 'llm.usage');
const data = reportFromSession({ header, events, reproduce: { command: 'x', notes: [] } });

describe('the HTML report of an evolutionary session', () => {
  it('holds the population: every variant with how it was made, its time, speed-up and niche; the rejected children and why; why it stopped', () => {
    const p = data.population!;
    const population = view.population!;
    expect(p.variants.map((v) => [v.id, v.parents])).toEqual(population.variants.map((v) => [v.id, v.parents]));
    const best = p.variants.find((v) => v.state === 'best')!;
    expect(best.id).toBe(population.bestId);
    expect(best.speedup).toBeCloseTo(population.variants[0]!.timeMs / best.timeMs, 12);
    expect(p.variants[0]).toMatchObject({ id: 'v0', madeBy: 'the original kernel', speedup: 1 });
    expect(p.variants.filter((v) => v.state === 'retired').map((v) => v.id)).toEqual(population.retired);
    const crossover = p.variants.find((v) => v.operator === 'crossover')!;
    expect(crossover.madeBy).toBe(`crossover of ${crossover.parents.join(' and ')}`);
    expect(crossover.niche).toMatch(/-bound, (low|mid|high) occupancy/);
    expect(p.rejected).toEqual(population.children.filter((c) => c.rejection).map((c) => ({ stepId: c.stepId, madeBy: expect.any(String), reason: expect.stringMatching(/^wrong result: /) })));
    expect(p.stopped).toBe('the 10 children asked for are made');
    expect(data.modelCalls).toHaveLength(usage.length);
    expect(data.modelCalls!.reduce((n, c) => n + c.costUsd!, 0)).toBeCloseTo(view.usage.costUsd!, 12);
  });

  it.skipIf(!hasChromium)('draws it: the tables, and the tokens and cost of the model beside the times (Chromium, under the report\'s CSP)', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      page.on('pageerror', (e) => problems.push(e.message));
      await page.setContent(renderReportHtml(data, readFileSync(join(root, 'dist', 'report-page.js'), 'utf8')));
      const rows = await page.locator('#variants tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)));
      expect(rows.map((r) => r[0])).toEqual(view.population!.variants.map((v) => v.id));
      const best = rows.find((r) => r[0] === view.population!.bestId)!;
      expect(best[4]).toBe(`${data.population!.variants.find((v) => v.id === best[0])!.speedup!.toFixed(2)}×`);
      expect(best[6]).toBe("the fastest (the session's kernel)");
      expect(await page.locator('#rejected tbody td:nth-child(3)').first().innerText()).toMatch(/^wrong result: /);
      expect(await page.locator('#population-stopped').innerText()).toBe('Evolution stopped: the 10 children asked for are made.');
      expect(await page.locator('#model-call-count .v').innerText()).toBe(String(usage.length));
      expect(await page.locator('#model-cost .v').innerText()).toBe(`$${view.usage.costUsd!.toFixed(4)}`);
      expect(await page.locator('#model-calls tbody tr').count()).toBe(usage.length);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
