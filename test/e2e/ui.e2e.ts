/**
 * The UI test a person would recognise, in Chromium against code-server: open saxpy.cu, right-click inside the kernel,
 * choose "Tune this kernel"; the panel fills with the plan, the steps, a diff and the chart; the tuned kernel appears
 * as an inline diff in the editor; "Accept All" applies it. Screenshots of every stage go to test-results/.
 * Runs in the test script's Node process (scripts/test-extension.mjs), with the mini runner's describe/it.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Frame, Page } from 'playwright-core';
import { startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';
import { after, before, describe, it, runAll } from '../extension/runner';

export interface UiTestOptions {
  base: string;
  workspace: string;
  fixtures: string;
  shots: string;
  /** Screenshots committed for the README (media/screenshots). */
  readmeShots: string;
  launchBrowser(): Promise<BrowserContext>;
  log(...args: unknown[]): void;
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** The content frame of a tuning panel that shows `selector` (several panels may be open, each in its own frame). */
async function panelFrame(page: Page, selector = '#app header', timeoutMs = 30_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      if (await frame.$(selector).catch(() => null)) return frame;
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`no tuning panel shows ${selector}`);
}

export async function runUiTest(o: UiTestOptions): Promise<void> {
  let server: ScriptedLlmServer;
  let approvalLlm: ScriptedLlmServer | undefined;
  let context: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];
  const shot = (name: string) => page.screenshot({ path: join(o.shots, `ui-${name}.png`) });
  /** Toasts (progress, "n× faster") would cover the panel in the screenshots. */
  const palette = async (command: string) => {
    await page.keyboard.press('F1');
    await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
    await page.keyboard.type(command, { delay: 10 });
    await page.waitForTimeout(400);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
  };
  const clearNotifications = () => palette('Notifications: Clear All Notifications');
  /** A failing step leaves a screenshot of what the browser showed. */
  const step = (name: string, fn: () => Promise<void>) => async (): Promise<void> => {
    try {
      await fn();
    } catch (error) {
      await page?.screenshot({ path: join(o.shots, `ui-FAILED-${name}.png`) }).catch(() => undefined);
      throw error;
    }
  };

  describe('UI: tune a kernel from the editor (Chromium + code-server)', () => {
    before(async () => {
      const script = JSON.parse(readFileSync(join(o.fixtures, 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] };
      server = await startScriptedLlmServer(script.turns);
      mkdirSync(join(o.workspace, '.vscode'), { recursive: true });
      writeFileSync(
        join(o.workspace, '.vscode', 'settings.json'),
        JSON.stringify({ 'kernelTuner.llm.provider': 'openai', 'kernelTuner.llm.model': 'scripted-model', 'kernelTuner.llm.baseUrl': `${server.url}/v1`, 'kernelTuner.retries': 1 }, null, 2),
      );
      mkdirSync(o.shots, { recursive: true });
      context = await o.launchBrowser();
      page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });
      // The extension is installed from its .vsix in this code-server: the window is an ordinary one.
      await page.goto(`${o.base}/?folder=${encodeURIComponent(o.workspace)}`);
      await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
      // The workbench takes a moment after it appears before it handles keys (extensions, layout).
      await page.waitForTimeout(3000);
    });
    after(async () => {
      await context?.close();
      await server?.close();
      await approvalLlm?.close();
    });

    it('opens the kernel and shows the "Tune kernel" lens', step('open', async () => {
      await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'saxpy.cu' }).first().click({ timeout: 30_000 });
      await page.waitForSelector('.monaco-editor .view-lines', { timeout: 20_000 });
      await page.locator('.codelens-decoration a', { hasText: 'Tune kernel' }).first().waitFor({ timeout: 30_000 });
      await shot('01-kernel');
    }), 90_000);

    it('right-click inside the kernel → "Tune this kernel" opens the panel, which fills live', step('tune', async () => {
      const line = page.locator('.monaco-editor .view-line', { hasText: 'int i = blockIdx.x' }).first();
      await line.click();
      // The context key behind the menu item follows the cursor after a short debounce.
      await page.waitForTimeout(500);
      await line.click({ button: 'right' });
      const item = page.locator('.monaco-menu .action-item', { hasText: 'Tune this kernel' }).first();
      await item.waitFor({ timeout: 10_000 });
      await shot('02-context-menu');
      await item.click();
      const frame = await panelFrame(page);
      await frame.locator('#plan vscode-collapsible').first().waitFor({ timeout: 60_000 });
      await shot('03-panel-running');
    }), 120_000);

    it('the panel shows the plan, the steps with their outcomes, a diff and the chart', step('panel', async () => {
      const frame = await panelFrame(page);
      await frame.locator('#status', { hasText: 'completed' }).waitFor({ timeout: 90_000 });
      const steps = await frame.locator('#plan vscode-collapsible').evaluateAll((els) => els.map((e) => [e.getAttribute('heading'), e.getAttribute('description')]));
      check(steps.length === 3, `three steps, got ${JSON.stringify(steps)}`);
      check(steps[0]![1]!.startsWith('rejected: wrong result'), `step 1 rejected for a wrong result, got ${steps[0]![1]}`);
      check(steps[1]![1]!.startsWith('rejected: too little gain'), `step 2 rejected for too little gain, got ${steps[1]![1]}`);
      check(steps[2]![1]!.startsWith('accepted'), `step 3 accepted, got ${steps[2]![1]}`);
      check((await frame.locator('#speedup').innerText()).includes('1.67× faster'), 'the speed-up is shown');
      const chartSummary = await frame.locator('#chart .chart-summary').innerText();
      check(/1 accepted step\(s\), now .* \(1\.67×\); 3 configuration\(s\) of ".+": 3 timed, 0 without a time, fastest .* with block_size_x=512\./.test(chartSummary), `the chart shows the accepted step and the three configurations, got ${chartSummary}`);
      check((await frame.locator('#chart canvas').getAttribute('aria-label'))!.includes(chartSummary), 'the chart canvas is labelled with its summary');
      // The accepted step is open by default: its diff and its configurations table.
      const accepted = frame.locator('#plan vscode-collapsible').nth(2);
      check((await accepted.locator('table.diff tr.add').count()) > 0, 'the accepted step shows added lines');
      check((await accepted.locator('table.configs tbody tr').count()) === 3, 'three configurations in the table');
      check((await accepted.locator('table.configs tr.best').innerText()).includes('512'), 'the best configuration is block_size_x 512');
      check((await frame.locator('#result pre.launch').innerText()).includes('dim3 block(512, 1, 1);'), 'the launch geometry is stated');
      await clearNotifications();
      await shot('04-panel-finished');
      await accepted.locator('vscode-button', { hasText: 'Side by side' }).click();
      await accepted.locator('table.diff-split').waitFor({ timeout: 5_000 });
      await accepted.locator('table.diff-split').scrollIntoViewIfNeeded();
      await shot('05-panel-step-diff');
    }), 120_000);

    it('hovering a point of the chart shows its tooltip; the chart exports as SVG and PNG', step('chart', async () => {
      const frame = await panelFrame(page);
      const canvas = frame.locator('#chart canvas');
      const tooltip = frame.locator('#chart .chart-tooltip');
      await canvas.scrollIntoViewIfNeeded();
      // Where the fastest configuration is drawn: the keyboard walk puts the tooltip at the point it reads.
      await canvas.focus();
      for (let i = 0; i < 8 && !(await tooltip.innerText()).includes('block_size_x=512'); i++) await page.keyboard.press('ArrowRight');
      const spot = await tooltip.evaluate((e) => ({ left: Number.parseFloat(e.style.left), top: Number.parseFloat(e.style.top) }));
      await page.keyboard.press('Escape');
      check(await tooltip.isHidden(), 'Escape hides the tooltip');
      const plot = (await frame.locator('#chart .chart-canvas').boundingBox())!;
      await page.mouse.move(plot.x + spot.left, plot.y + spot.top);
      await tooltip.waitFor({ state: 'visible', timeout: 5_000 });
      const text = await tooltip.innerText();
      const stepTitle = (await frame.locator('#plan vscode-collapsible').nth(2).getAttribute('heading'))!.replace(/^\d+\.\s*/, '');
      for (const part of ['block_size_x=512', 'Time: ', 'Speed-up: 1.67× vs baseline', `Step: ${stepTitle}`, 'Result: ok']) check(text.includes(part), `the tooltip says ${part}, got ${JSON.stringify(text)}`);
      await clearNotifications();
      await page.mouse.move(plot.x + spot.left, plot.y + spot.top + 1);
      await tooltip.waitFor({ state: 'visible', timeout: 5_000 });
      await frame.locator('#performance').screenshot({ path: join(o.readmeShots, 'chart-tooltip.png') });
      // Export: the host asks where to save (code-server's own file dialog, the workspace folder by default).
      for (const format of ['svg', 'png'] as const) {
        await frame.locator(`#export-${format}`).click();
        const dialog = page.locator('.quick-input-widget input');
        await dialog.waitFor({ state: 'visible', timeout: 10_000 });
        // The dialog fills its path in after it opens.
        let proposed = '';
        for (let i = 0; i < 25; i++) {
          proposed = await dialog.inputValue();
          if (proposed.endsWith(`/saxpy-performance.${format}`)) break;
          await page.waitForTimeout(200);
        }
        check(proposed.endsWith(`/saxpy-performance.${format}`), `the dialog proposes saxpy-performance.${format}, got ${proposed}`);
        await page.keyboard.press('Enter');
        const file = join(o.workspace, `saxpy-performance.${format}`);
        for (let i = 0; i < 50 && !existsSync(file); i++) await page.waitForTimeout(200);
        const bytes = readFileSync(file);
        if (format === 'svg') {
          const svg = bytes.toString('utf8');
          check(svg.startsWith('<?xml') && svg.includes('<svg') && svg.trimEnd().endsWith('</svg>') && svg.includes('Configurations'), "an SVG document with the chart's text");
        } else check(bytes.subarray(1, 4).toString('latin1') === 'PNG' && bytes.readUInt32BE(16) === 1920, 'a PNG of 1920 pixels wide');
      }
    }), 90_000);

    it('the tuned kernel is an inline diff in the editor; Accept All applies it', step('accept', async () => {
      const acceptAll = page.locator('.codelens-decoration a', { hasText: 'Accept All' }).first();
      await acceptAll.waitFor({ timeout: 30_000 });
      await clearNotifications();
      await palette('View: Focus First Editor Group');
      await page.keyboard.press('Control+Home');
      await shot('06-inline-diff');
      await acceptAll.click();
      await page.locator('.monaco-editor .view-line', { hasText: '#define block_size_x 512' }).first().waitFor({ timeout: 10_000 });
      // The lenses go with the next CodeLens refresh.
      await page.locator('.codelens-decoration a', { hasText: 'Accept All' }).first().waitFor({ state: 'detached', timeout: 10_000 });
      await shot('07-accepted');
    }), 90_000);

    it('the Tuning History lists the session', step('history', async () => {
      await page.locator('.activitybar [aria-label^="Kernel Tuner"]').first().click();
      const item = page.locator('.monaco-list-row', { hasText: 'saxpy' }).first();
      await item.waitFor({ timeout: 15_000 });
      check((await item.innerText()).includes('1.67×'), 'the history item shows the speed-up');
      await item.locator('.monaco-tl-twistie').click();
      await page.locator('.monaco-list-row', { hasText: 'Tune the block size' }).first().waitFor({ timeout: 10_000 });
      await shot('08-history');
      // Theme colours only: the same panel in the dark and the high-contrast theme.
      for (const [theme, name] of [
        ['Dark Modern', '09-dark'],
        ['Dark High Contrast', '10-high-contrast'],
      ] as const) {
        // Ctrl+K Ctrl+T: the colour theme picker.
        await page.keyboard.press('Control+K');
        await page.keyboard.press('Control+T');
        await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
        await page.keyboard.type(theme, { delay: 10 });
        await page.waitForTimeout(500);
        await page.keyboard.press('Enter');
        await page.waitForTimeout(1500);
        await shot(name);
      }
      const cspErrors = consoleErrors.filter((e) => /Content Security Policy/i.test(e));
      check(cspErrors.length === 0, `no CSP violations, got ${cspErrors.join('\n')}`);
    }), 60_000);

    it('the session waits with an editable plan; Approve continues it to the end', step('approval', async () => {
      const script = JSON.parse(readFileSync(join(o.fixtures, 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] };
      approvalLlm = await startScriptedLlmServer(script.turns);
      const settingsFile = join(o.workspace, '.vscode', 'settings.json');
      const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
      writeFileSync(settingsFile, JSON.stringify({ ...settings, 'kernelTuner.llm.baseUrl': `${approvalLlm.url}/v1`, 'kernelTuner.approvePlan': true }, null, 2));
      await page.waitForTimeout(1500);
      // Back to the original kernel (undo the accepted change), then tune it from the lens.
      await palette('View: Focus First Editor Group');
      await page.keyboard.press('Control+Z');
      await page.locator('.monaco-editor .view-line', { hasText: 'blockDim.x' }).first().waitFor({ timeout: 10_000 });
      await page.locator('.codelens-decoration a', { hasText: 'Tune kernel' }).first().click();
      const frame = await panelFrame(page, '#plan-editor', 60_000);
      const editor = frame.locator('#plan-editor');
      check((await editor.locator('li').count()) === 3, 'three steps to approve');
      await frame.locator('#approval').scrollIntoViewIfNeeded();
      await clearNotifications();
      await shot('11-plan-approval');
      await frame.locator('#approve').click();
      await frame.locator('#status', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
      check(approvalLlm.mismatches.length === 0, `the script matched: ${JSON.stringify(approvalLlm.mismatches)}`);
    }), 120_000);
  });

  await runAll('UI test');
}
