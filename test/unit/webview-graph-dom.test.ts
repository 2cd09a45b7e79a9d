// The graph section as the panel draws it, in Chromium (playwright-core, Debian's chromium; skipped where it is not
// installed): under the panel's kind of CSP, from the events of a described graph and its node runs, with a click on a
// node showing its runs.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, type TuningEvent, type TuningEventBody } from '../../src/engine/progress/events';
import { bundleForPage, hasChromium, launchChromium, pageUnderCsp } from '../support/chromium-page';
import { SESSION_GRAPH } from '../support/graph-events';

const ev = (body: TuningEventBody): TuningEvent => makeEvent(body);
const events: TuningEvent[] = [
  ev({
    type: 'graph.described',
    graphs: [
      SESSION_GRAPH,
      {
        id: 'tune',
        name: 'my_strategy',
        nodes: [{ id: '__start__' }, { id: 'plan' }, { id: 'try' }, { id: '__end__' }],
        edges: [
          { source: '__start__', target: 'plan', conditional: false },
          { source: 'plan', target: 'try', conditional: true },
          { source: 'try', target: 'plan', conditional: false },
          { source: 'plan', target: '__end__', conditional: true },
        ],
      },
    ],
  }),
  ev({ type: 'graph.node', graph: 'session', node: 'analyze', task: 'a', phase: 'started', data: { code: '<b>not html</b>' } }),
  ev({ type: 'graph.node', graph: 'session', node: 'analyze', task: 'a', phase: 'finished', data: { analysis: 'done' } }),
  ev({ type: 'graph.node', graph: 'session', node: 'tune', task: 't', phase: 'started' }),
  ev({ type: 'graph.node', graph: 'tune', node: 'plan', task: 'p1', phase: 'started' }),
  ev({ type: 'graph.node', graph: 'tune', node: 'plan', task: 'p1', phase: 'finished', data: { plan: [1] } }),
  ev({ type: 'graph.node', graph: 'tune', node: 'try', task: 'x1', phase: 'started', data: { step: 1 } }),
  ev({ type: 'llm.retry', purpose: 'step 1', attempt: 1, error: 'CompileError', message: 'no' }),
];

describe.skipIf(!hasChromium)('graph section in Chromium', () => {
  let browser: Browser;
  let script: string;
  beforeAll(async () => {
    const entry = `import { renderGraphSection } from './webview/graph-panel';
      import { reduceGraphAll } from './webview/graph-model';
      const events = ${JSON.stringify(events)};
      let selected;
      const draw = () => document.body.replaceChildren(renderGraphSection(reduceGraphAll(events), selected, (key) => { selected = key; draw(); }));
      draw();`;
    script = await bundleForPage(entry);
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => browser?.close());

  it('draws both graphs, lights the running nodes, counts the retry, and shows a node\'s runs on a click', async () => {
    const { page, problems } = await pageUnderCsp(browser, script);
    const nodes = await page.$$eval('g.node', (gs) => gs.map((g) => `${g.getAttribute('data-graph')}/${g.getAttribute('data-node')} ${g.getAttribute('class')}`));
    expect(nodes.sort()).toEqual(
      [
        'session/__start__ node status-terminal',
        'session/analyze node status-visited',
        'session/tune node status-active host',
        'session/__end__ node status-terminal',
        'tune/__start__ node status-terminal',
        'tune/plan node status-visited',
        'tune/try node status-active',
        'tune/__end__ node status-terminal',
      ].sort(),
    );
    expect(await page.locator('g.node[data-node="try"] text.badge').textContent()).toBe('↻1');
    expect(await page.locator('path.edge').count()).toBe(7);
    expect(await page.locator('path.edge.conditional').count()).toBe(2);
    await page.click('g.node[data-graph="session"][data-node="analyze"]');
    const details = page.locator('#graph-node-details');
    expect(await details.locator('h3').textContent()).toBe('session/analyze');
    expect(await details.locator('summary').first().textContent()).toMatch(/^Run 1: finished/);
    expect(await details.locator('pre.json').first().textContent()).toContain('"code": "<b>not html</b>"');
    expect(await page.locator('g.node[data-node="analyze"]').getAttribute('class')).toContain('selected');
    expect(problems).toEqual([]);
  });
});
