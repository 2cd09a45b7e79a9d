// The lineage tree in the tuning panel (the whole webview bundle, in Chromium: playwright-core with Debian's chromium;
// skipped where it is not installed), under the panel's kind of CSP, fed the recorded evolutionary session (fake GPU)
// as the host feeds it: drawn live as the events arrive, a node's details on a click or from the keyboard, and the
// messages its buttons send to the host.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TuningEvent } from '../../src/engine/progress/events';
import { reduceAll, type SessionHeader } from '../../src/engine/session/session-view';
import { bundleForPage, hasChromium, launchChromium, pageUnderCsp } from '../support/chromium-page';

const root = join(__dirname, '..', '..');
const recorded = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'sessions', 'evolution-saxpy.fake-gpu.json'), 'utf8')) as { report: { header: SessionHeader; events: TuningEvent[] } };
const { header, events } = recorded.report;
const population = reduceAll(header, events).population!;
/** A variant that entered without becoming the fastest: what "Propose in editor" is for besides the final kernel. */
const kept = population.variants.findLast((v) => v.child !== null && v.id !== population.bestId)!;
const rejected = population.children.find((c) => c.rejection)!;

/** The webview's host, as far as the page can tell: its messages are kept in window.posted. */
const HOST_DOUBLE = `window.posted = [];
  const app = document.createElement('main'); app.id = 'app'; document.body.append(app); document.body.dataset.sessionId = ${JSON.stringify(header.sessionId)};
  window.acquireVsCodeApi = () => ({ postMessage: (m) => window.posted.push(m), getState: () => undefined, setState: () => undefined });`;

const posted = (page: Page) => page.evaluate(() => (window as unknown as { posted: { type: string }[] }).posted.filter((m) => m.type !== 'rendered'));
const send = (page: Page, message: unknown) => page.evaluate((m) => window.postMessage(m, '*'), message);

describe.skipIf(!hasChromium)('the lineage tree in the panel (Chromium)', () => {
  let browser: Browser;
  let script: string;
  let style: string;
  beforeAll(async () => {
    script = `${HOST_DOUBLE}\n${await bundleForPage("import './webview/main';")}`;
    style = readFileSync(join(root, 'media', 'panel.css'), 'utf8');
    browser = await launchChromium();
  }, 90_000);
  afterAll(async () => browser?.close());

  it('draws the population live as its events arrive, the rejected child dimmed with why, the operators on the edges', async () => {
    const { page, problems } = await pageUnderCsp(browser, script, { style, viewport: { width: 1200, height: 1600 } });
    const half = events.findIndex((e) => e.type === 'population.rejected');
    await send(page, { type: 'session', header, events: events.slice(0, half), live: true });
    await page.waitForSelector('#lineage svg.lineage');
    const before = await page.locator('g.lineage-node').count();
    expect(await page.locator('g.lineage-node.kind-unfinished').count()).toBeGreaterThan(0);
    await send(page, { type: 'events', sessionId: header.sessionId, from: half, events: events.slice(half) });
    await send(page, { type: 'live', sessionId: header.sessionId, live: false, header });
    await page.waitForSelector(`g.lineage-node[data-node="${population.bestId}"].best`);
    const nodes = await page.$$eval('g.lineage-node', (gs) => gs.map((g) => g.getAttribute('data-node')));
    expect(nodes.length).toBeGreaterThan(before);
    expect(nodes.sort()).toEqual([...population.variants.map((v) => v.id), ...population.children.filter((c) => c.rejection).map((c) => c.stepId)].sort());
    expect(await page.locator('g.lineage-node.kind-unfinished').count()).toBe(0);
    const dimmed = page.locator(`g.lineage-node.kind-rejected[data-node="${rejected.stepId}"]`);
    expect(await dimmed.getAttribute('aria-label')).toMatch(/: rejected, wrong result$/);
    expect(await dimmed.evaluate((g) => getComputedStyle(g).opacity)).toBe('0.6');
    const labels = await page.$$eval('text.edge-label', (ts) => [...new Set(ts.map((t) => t.textContent))].sort());
    expect(labels).toEqual(['crossover', 'judge', 'mutate']);
    for (const id of population.retired) expect(await page.locator(`g.lineage-node[data-node="${id}"]`).getAttribute('class')).toContain('retired');
    expect(await page.locator('#lineage-stopped').innerText()).toContain('Evolution stopped: the 10 children asked for are made.');
    expect(problems).toEqual([]);
  });

  it("shows a variant's changes, configurations and model calls on a click, and sends what its buttons ask for", async () => {
    const { page, problems } = await pageUnderCsp(browser, script, { style, viewport: { width: 1200, height: 1600 } });
    await send(page, { type: 'session', header, events, live: false });
    await page.click(`g.lineage-node[data-node="${kept.id}"]`);
    const details = page.locator('#lineage-details');
    expect(await details.locator('h3').innerText()).toMatch(new RegExp(`^${kept.id}: `));
    const added = await details.locator('table.diff tr.add td.code').allInnerTexts();
    const marker = kept.code.split('\n').filter((l) => l.startsWith('// FAKE_SPEED')).at(-1)!;
    expect(added).toContain(marker);
    expect(await details.locator('table.configs tbody tr').count()).toBeGreaterThan(0);
    expect(await details.locator('table.model-calls caption').innerText()).toBe(`Model calls of ${kept.stepId}`);
    expect(await details.locator('table.model-calls tbody td:first-child').allInnerTexts()).toContain(`step ${kept.stepId}`);
    expect(await details.locator('table.model-calls tfoot').innerText()).toMatch(/\$\d+\.\d{4}/);
    expect(await page.getAttribute(`g.lineage-node[data-node="${kept.id}"]`, 'aria-pressed')).toBe('true');
    await page.click('#propose-variant');
    await page.click('#branch-variant');
    await page.click('#evolve-further');
    expect(await posted(page)).toEqual([
      { type: 'ready', sessionId: header.sessionId },
      { type: 'proposeVariant', sessionId: header.sessionId, variantId: kept.id },
      { type: 'branchVariant', sessionId: header.sessionId, variantId: kept.id },
      { type: 'evolveFurther', sessionId: header.sessionId },
    ]);
    // A rejected child: why, and nothing to propose or branch from.
    await page.click(`g.lineage-node[data-node="${rejected.stepId}"]`);
    expect(await details.locator('.rejection').innerText()).toMatch(/^Rejected: wrong result: /);
    expect(await page.locator('#propose-variant').count()).toBe(0);
    // Every call of the session, with its cost, in a section of its own.
    expect(await page.locator('#model-calls table.model-calls tbody tr').count()).toBe(events.filter((e) => e.type === 'llm.usage').length);
    expect(problems).toEqual([]);
  });

  it('works from the keyboard: Tab reaches the nodes in reading order, Enter opens one, and the focus stays on it', async () => {
    const { page, problems } = await pageUnderCsp(browser, script, { style, viewport: { width: 1200, height: 1600 } });
    await send(page, { type: 'session', header, events, live: false });
    await page.waitForSelector('#lineage svg.lineage');
    await page.focus('#lineage-node-v0');
    await page.keyboard.press('Tab');
    const second = await page.evaluate(() => document.activeElement?.id);
    expect(second).toMatch(/^lineage-node-/);
    await page.keyboard.press('Enter');
    const id = second!.slice('lineage-node-'.length);
    await page.waitForSelector(`#lineage-details h3`);
    expect(await page.locator('#lineage-details h3').innerText()).toMatch(new RegExp(`^${id}: `));
    // The panel was drawn again: the same node has the focus, and says it is the one shown.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(second);
    expect(await page.getAttribute(`#${second}`, 'aria-pressed')).toBe('true');
    expect(problems).toEqual([]);
  });
});
