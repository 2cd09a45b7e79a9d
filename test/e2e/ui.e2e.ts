/**
 * The UI test a person would recognise, in Chromium against code-server:
 * - a session recorded on an NVIDIA H100 (test/fixtures/sessions/h100-matmul-naive.events.json: real GPU timings, the
 *   LLM's answers scripted) is put in the history and replayed into the panel, which opens below the code; a keyboard
 *   walk of the panel; its proposal in the editor: Escape rejects the change at the cursor, Reject All leaves the file
 *   byte for byte, Accept All gives the proposal, one Undo the original (each checked on the saved file); light and
 *   dark screenshots (with --update-screenshots, the ones the README shows go to media/screenshots/ too);
 * - its HTML report, opened where the panels are, charting the step the panel charts, numbered as the plan numbers
 *   it; its JSON export, opened from the notification;
 * - the checks before a session, failing: one plain message, nothing else left up;
 * - then a live session: open saxpy.cu, right-click inside the kernel, "Tune this kernel" (the stored API key goes to
 *   the workspace's server once the user says so); the panel fills with the plan, the steps, a diff and the chart; the
 *   tuned kernel is proposed in the editor; "Accept All" applies it.
 * Each step starts from a quiet window (no palette, dialog or menu left open by a step that failed) and opens what it
 * needs that an earlier step would have opened, so one failure does not fail the steps after it.
 * Screenshots of every stage go to test-results/. Runs in the test script's Node process (scripts/test-extension.mjs),
 * with the mini runner's describe/it.
 */
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Frame, Locator, Page } from 'playwright-core';
import type { TuningEvent } from '../../src/engine/progress/events';
import { HistoryEntrySchema, HistoryStore } from '../../src/engine/store/history-store';
import { buildReport } from '../../src/extension/report';
import { historyFields, reduceAll, type PopulationView, type SessionHeader } from '../../src/engine/session/session-view';
import { startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';
import { after, before, describe, it, runAll } from '../extension/runner';

export interface UiTestOptions {
  base: string;
  workspace: string;
  fixtures: string;
  shots: string;
  /** code-server's --user-data-dir: the extension's history is seeded there before the window opens. */
  userData: string;
  /** While this file exists, the test backend stands for a machine without a GPU (test/extension/test-backend.ts). */
  noGpuFile: string;
  /** Where the README's screenshots go as well (media/screenshots/), when they are to be updated. */
  readmeShots?: string;
  launchBrowser(): Promise<BrowserContext>;
  log(...args: unknown[]): void;
}

const H100_SESSION = 'h100-matmul-naive';

/** What has the keyboard focus in a panel: its name (aria-label, else text), role, states and focus indicator. */
interface Stop {
  name: string;
  role: string;
  tag: string;
  pressed: string | null;
  expanded: string | null;
  sort: string | null;
  outline: string;
}

/** Evaluated in the panel's frame (a string: this file is compiled without the DOM's types). */
const FOCUSED = `(() => {
  const host = document.activeElement;
  const inner = (host.shadowRoot && host.shadowRoot.activeElement) || host;
  const style = getComputedStyle(inner);
  const outline = style.outlineStyle !== 'none' && style.outlineWidth !== '0px' ? style.outlineStyle + ' ' + style.outlineColor : style.boxShadow !== 'none' ? 'shadow ' + style.boxShadow : 'none';
  const name = inner.getAttribute('aria-label') || host.getAttribute('aria-label') || (host.textContent || '').trim();
  return { name, role: inner.getAttribute('role') || '', tag: host.tagName.toLowerCase(), pressed: host.getAttribute('aria-pressed'), expanded: inner.getAttribute('aria-expanded'), sort: host.getAttribute('aria-sort'), outline };
})()`;

/**
 * The recorded H100 session as the extension's history keeps a session. The model line says what answered: the LLM's
 * answers were scripted for that run (the GPU, its timings and checks were real).
 */
async function seedH100Session(o: UiTestOptions): Promise<{ original: string; finalCode: string }> {
  const events = JSON.parse(readFileSync(join(o.fixtures, 'sessions', `${H100_SESSION}.events.json`), 'utf8')) as TuningEvent[];
  const file = join(o.workspace, 'matmul_naive.cu');
  copyFileSync(join(o.fixtures, 'kernels', 'matmul_naive.cu'), file);
  const original = readFileSync(file, 'utf8');
  const header: SessionHeader = { sessionId: H100_SESSION, kernelName: 'matmul_naive', fileName: 'matmul_naive.cu', startedAt: events[0]!.at, model: 'scripted answers (test double, no LLM)', strategy: 'autonomous' };
  const view = reduceAll(header, events);
  const store = new HistoryStore(join(o.userData, 'User', 'globalStorage', 'llm-kernel-tuner.llm-kernel-tuner', 'history'));
  await store.save({
    id: H100_SESSION,
    kernelName: 'matmul_naive',
    filePath: 'matmul_naive.cu',
    fileUri: pathToFileURL(file).href,
    createdAt: header.startedAt,
    updatedAt: events.at(-1)!.at,
    originalCode: original,
    threadId: H100_SESSION,
    device: { name: view.device!.name },
    ...historyFields(view),
    report: buildReport(header, events, view),
  });
  return { original, finalCode: view.final!.finalCode };
}

/**
 * The recorded evolutionary session (recorded on the fake GPU: test/fixtures/sessions/evolution-saxpy.fake-gpu.json) in
 * the history as it was stored, its file in the workspace's evolution/ folder (apart from the live sessions' saxpy.cu);
 * returns its population and the file as it was.
 */
async function seedEvolutionSession(o: UiTestOptions): Promise<{ original: string; population: PopulationView }> {
  const entry = HistoryEntrySchema.parse(JSON.parse(readFileSync(join(o.fixtures, 'sessions', 'evolution-saxpy.fake-gpu.json'), 'utf8')));
  const file = join(o.workspace, 'evolution', 'saxpy.cu');
  mkdirSync(join(o.workspace, 'evolution'), { recursive: true });
  writeFileSync(file, entry.originalCode);
  const { header, events } = entry.report as { header: SessionHeader; events: TuningEvent[] };
  const store = new HistoryStore(join(o.userData, 'User', 'globalStorage', 'llm-kernel-tuner.llm-kernel-tuner', 'history'));
  // Dated before the live sessions: the history lists those first.
  await store.save({ ...entry, filePath: 'evolution/saxpy.cu', fileUri: pathToFileURL(file).href, createdAt: '2000-01-01T00:00:00.000Z' });
  return { original: entry.originalCode, population: reduceAll(header, events).population! };
}

/** Matches a text exactly (the whole of it). */
function exactly(text: string): RegExp {
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/**
 * The content frame of a webview that shows `selector` (with `text` in it, when given): several panels may be open,
 * each in its own frame.
 */
async function panelFrame(page: Page, selector = '#app header', timeoutMs = 30_000, text?: string): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      const el = await frame.$(selector).catch(() => null);
      if (el && (text === undefined || ((await el.innerText().catch(() => '')) ?? '').includes(text))) return frame;
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`no webview shows ${selector}${text === undefined ? '' : ` with "${text}"`}`);
}

export async function runUiTest(o: UiTestOptions): Promise<void> {
  let server: ScriptedLlmServer;
  let approvalLlm: ScriptedLlmServer | undefined;
  let ollama: ScriptedLlmServer | undefined;
  let context: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];
  const shot = (name: string) => page.screenshot({ path: join(o.shots, `ui-${name}.png`) });
  /** A screenshot the README shows: kept in test-results/, and in media/screenshots/ when they are being updated. */
  const readmeShot = async (name: string) => {
    await page.screenshot({ path: join(o.shots, `${name}.png`) });
    if (o.readmeShots) copyFileSync(join(o.shots, `${name}.png`), join(o.readmeShots, `${name}.png`));
  };
  /** A theme by the colour theme picker; done when the workbench wears it (`kind`: its class, vs, vs-dark, hc-black). */
  const setTheme = async (theme: string, kind: string) => {
    await palette('Preferences: Color Theme', { pick: theme });
    await page.locator(`.monaco-workbench.${kind}`).waitFor({ timeout: 10_000 });
  };
  let h100: { original: string; finalCode: string };
  let evolution: { original: string; population: PopulationView };
  /** The workspace's settings for the live sessions: the scripted server, one correction per failing step. */
  const liveSettings = (): Record<string, unknown> => ({ 'kernelTuner.llm.provider': 'openai', 'kernelTuner.llm.model': 'scripted-model', 'kernelTuner.llm.baseUrl': `${server.url}/v1`, 'kernelTuner.retries': 1 });
  /** The code keeps the window's width; the panels (`what`) sit below it, in a second group. */
  const checkCodeAbovePanels = async (what: string) => {
    const groups = await page.locator('.editor-group-container').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => ({ x: r.x, y: r.y, width: r.width, height: r.height })));
    check(groups.length === 2, `two editor groups with ${what}, got ${JSON.stringify(groups)}`);
    const [code, panel] = groups as [(typeof groups)[0], (typeof groups)[0]];
    check(panel.y >= code.y + code.height - 2 && code.width >= 0.6 * (page.viewportSize()?.width ?? 1600), `${what} below a full-width editor: ${JSON.stringify(groups)}`);
  };
  const matmulFile = () => readFileSync(join(o.workspace, 'matmul_naive.cu'), 'utf8');
  /** Saves the editor's document and waits for the file to read `expected`, every byte of it. */
  const save = async (expected: string, what: string) => {
    await palette('View: Focus First Editor Group');
    await page.keyboard.press('Control+S');
    for (let i = 0; i < 50 && matmulFile() !== expected; i++) await page.waitForTimeout(200);
    check(matmulFile() === expected, what);
  };
  const lens = (title: string) => page.locator('.codelens-decoration a', { hasText: title }).first();
  /** How many lens lines of changes the editor shows ("Accept | Reject | ..."). */
  const acceptLensLines = () => page.locator('.codelens-decoration').evaluateAll((els) => els.filter((e) => (e.querySelector('a')?.textContent ?? '').trim() === 'Accept').length);
  /** Closes what a step may have left open over the window: the palette or another quick input, a dialog, a menu. */
  const quiet = async () => {
    for (let i = 0; i < 3; i++) {
      const open = (await page.locator('.quick-input-widget').isVisible()) || (await page.locator('.monaco-dialog-box').isVisible()) || (await page.locator('.context-view .monaco-menu').isVisible());
      if (!open) return;
      await page.keyboard.press('Escape');
      await page.waitForTimeout(100);
    }
  };
  /**
   * Runs a command from the palette (`pick`: then the item of the list it opens). Typed only once the palette has the
   * focus (keys sent anywhere else would land in a document); Enter once the list's first item is the one asked for.
   */
  const palette = async (command: string, then?: { pick: string } | { type: string }) => {
    await quiet();
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press('F1');
      const focused = await page.waitForSelector('.quick-input-widget input:focus', { timeout: 5_000 }).then(() => true, () => false);
      if (focused) break;
      check(attempt < 3, 'the command palette takes the focus');
      await quiet();
    }
    // The text goes into the quick input itself, never to where the focus may have gone meanwhile (an editor that a
    // session's end brings to the front); then the item named exactly so, which the list may not rank first ("Browse
    // Color Themes in Marketplace" before "Color Theme"): Enter when it is the focused one, else a click on it.
    const input = page.locator('.quick-input-widget input');
    const choose = async (text: string, prefix: string) => {
      await input.fill(`${prefix}${text}`);
      const item = page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exactly(text) }) }).first();
      await item.waitFor({ timeout: 10_000 });
      if ((await item.getAttribute('class'))?.split(' ').includes('focused')) await input.press('Enter');
      else await item.click({ timeout: 10_000 });
    };
    await choose(command, '>');
    if (then) {
      // The command's own quick pick or input box: the palette's text ('>' and the command) gone from the input.
      const value = () => input.inputValue({ timeout: 200 }).catch(() => '>');
      for (let i = 0; i < 50 && (await value()) !== ''; i++) await page.waitForTimeout(100);
      check((await value()) === '', `the quick input of ${command} opened`);
      if ('pick' in then) await choose(then.pick, '');
      else {
        await input.fill(then.type);
        await input.press('Enter');
      }
    }
    await page.waitForSelector('.quick-input-widget', { state: 'hidden', timeout: 10_000 });
  };
  let settingsRound = 0;
  /**
   * Writes the workspace's settings and waits until VS Code has read them: the window title they set changes with
   * them, in the same reload of the file (a command run afterwards reaches the extension after the new settings).
   */
  const workspaceSettings = async (values: Record<string, unknown>) => {
    const marker = `settings ${++settingsRound}`;
    writeFileSync(join(o.workspace, '.vscode', 'settings.json'), JSON.stringify({ ...values, 'window.title': `\${rootName} (${marker})` }, null, 2));
    for (let i = 0; i < 75 && !(await page.title()).includes(marker); i++) await page.waitForTimeout(200);
    check((await page.title()).includes(marker), `VS Code read the workspace settings (${marker}), title ${await page.title()}`);
  };
  /** The H100 session's panel, in front (opened, or brought to the front, from the history). */
  const h100Panel = async (): Promise<Frame> => {
    await sideBar('Kernel Tuner');
    await page.locator('.monaco-list-row', { hasText: 'matmul_naive' }).first().click({ timeout: 15_000 });
    await tab('Report: matmul_naive').first().waitFor({ timeout: 15_000 });
    return panelFrame(page, '#app #device', 30_000, 'NVIDIA H100');
  };
  /** Closes every editor, unsaved ones without saving. */
  const closeAllEditors = async () => {
    await palette('View: Close All Editor Groups');
    const ask = page.locator('.monaco-dialog-box');
    if (await ask.waitFor({ timeout: 1_000 }).then(() => true, () => false)) await clickUntilGone(ask.locator('.monaco-button', { hasText: "Don't Save" }), ask);
  };
  /** The tab titled exactly `title`. */
  const tab = (title: string) => page.locator('.tab', { has: page.locator('.label-name', { hasText: exactly(title) }) });
  /** The side bar's view behind the activity bar item `label`, shown if it is not (a second click would hide it). */
  const sideBar = async (label: 'Explorer' | 'Kernel Tuner') => {
    const title = page.locator('.sidebar .composite.title', { hasText: label === 'Explorer' ? 'Explorer' : 'Tuning History' });
    if (!(await title.isVisible())) await page.locator(`.activitybar [aria-label^="${label}"]`).first().click();
    await title.waitFor({ timeout: 10_000 });
  };
  /** A history item's context menu command. */
  const historyMenu = async (item: string, command: string) => {
    await sideBar('Kernel Tuner');
    await page.locator('.monaco-list-row', { hasText: item }).first().click({ button: 'right', timeout: 15_000 });
    await clickUntilGone(page.locator('.context-view .monaco-menu .action-item', { hasText: command }).first(), page.locator('.context-view .monaco-menu'));
  };
  /**
   * Clicks `target` until `gone` (a menu, a dialog) has closed: a menu or a dialog that has just opened ignores a
   * click for a moment (so that the click which opened it cannot also choose in it).
   */
  const clickUntilGone = async (target: Locator, gone: Locator) => {
    for (let attempt = 1; ; attempt++) {
      await target.click({ timeout: 10_000 });
      if (await gone.waitFor({ state: 'hidden', timeout: 1_000 }).then(() => true, () => false)) return;
      check(attempt < 5, 'the menu or dialog takes the click');
    }
  };
  /** Toasts (progress, "n× faster") would cover the panel in the screenshots. */
  const clearNotifications = () => palette('Notifications: Clear All Notifications');
  /** A failing step leaves a screenshot of what the browser showed. */
  const step = (name: string, fn: () => Promise<void>) => async (): Promise<void> => {
    try {
      await quiet();
      await fn();
    } catch (error) {
      await page?.screenshot({ path: join(o.shots, `ui-FAILED-${name}.png`) }).catch(() => undefined);
      await quiet().catch(() => undefined);
      throw error;
    }
  };

  describe('UI: tune a kernel from the editor (Chromium + code-server)', () => {
    before(async () => {
      const script = JSON.parse(readFileSync(join(o.fixtures, 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] };
      server = await startScriptedLlmServer(script.turns);
      mkdirSync(join(o.workspace, '.vscode'), { recursive: true });
      writeFileSync(join(o.workspace, '.vscode', 'settings.json'), JSON.stringify(liveSettings(), null, 2));
      mkdirSync(o.shots, { recursive: true });
      h100 = await seedH100Session(o);
      evolution = await seedEvolutionSession(o);
      context = await o.launchBrowser();
      page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });
      // The extension is installed from its .vsix in this code-server: the window is an ordinary one.
      await page.goto(`${o.base}/?folder=${encodeURIComponent(o.workspace)}`);
      await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
      // Keys reach the workbench once its parts are laid out and the extensions' views are in.
      await page.locator('.activitybar [aria-label^="Kernel Tuner"]').first().waitFor({ timeout: 60_000 });
      await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'saxpy.cu' }).first().waitFor({ timeout: 60_000 });
    });
    after(async () => {
      await context?.close();
      await server?.close();
      await approvalLlm?.close();
      await ollama?.close();
    });

    it('a session recorded on an H100 replays into the panel, which opens below the code', step('h100-panel', async () => {
      await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'matmul_naive.cu' }).first().click({ timeout: 30_000 });
      await page.locator('.monaco-editor .view-line', { hasText: '__global__ void matmul_naive' }).first().waitFor({ timeout: 20_000 });
      await sideBar('Kernel Tuner');
      await page.locator('.monaco-list-row', { hasText: 'matmul_naive' }).first().click({ timeout: 15_000 });
      const frame = await panelFrame(page);
      await frame.locator('#status', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
      check((await frame.locator('#device').innerText()).includes('NVIDIA H100'), 'the panel names the H100');
      check((await frame.locator('header').innerText()).includes('scripted answers (test double, no LLM)'), 'the model line says the answers were scripted');
      await checkCodeAbovePanels('the panel');
      await clearNotifications();
      await shot('h100-01-layout');
    }), 90_000);

    it('the panel passes a keyboard-only walk: every control in order, named, with visible focus', step('keyboard', async () => {
      const frame = await h100Panel();
      await frame.locator('h1').click();
      const stops: Stop[] = [];
      for (let i = 0; i < 14; i++) {
        await page.keyboard.press('Tab');
        stops.push(await frame.evaluate<Stop>(FOCUSED));
      }
      o.log(`keyboard walk: ${JSON.stringify(stops.map((s) => `${s.tag}${s.role ? `[${s.role}]` : ''}: ${s.name.slice(0, 50)}`))}`);
      const names = stops.map((s) => s.name);
      const at = (text: string) => names.findIndex((n) => n.startsWith(text));
      const order = ['Show the tuned kernel as a proposal in the editor', 'Open the tuned kernel side by side', '1. Shared-memory tiling, first try', '2. Shared-memory tiling', 'Apply step 2 in the editor', 'Unified diffs', 'Side-by-side diffs'].map(at);
      check(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!)), `the controls in reading order: ${JSON.stringify(names)}`);
      for (const s of stops.slice(0, order.at(-1)! + 1)) {
        check(s.name !== '', `a focused ${s.tag} has a name`);
        check(s.outline !== 'none', `the focus on "${s.name}" is visible`);
      }
      check(stops[order[2]!]!.role === 'button' && stops[order[2]!]!.expanded === 'false', 'a step header is a button that says it is closed');
      check(stops[order[5]!]!.pressed === 'true' && stops[order[6]!]!.pressed === 'false', 'the diff layout buttons say which one is on');
      // Sorting from the keyboard keeps the focus on the header although the panel is drawn again.
      const sortable = names.findIndex((n) => n.startsWith('Median time'));
      check(sortable > order.at(-1)!, `the configurations' headers come next: ${JSON.stringify(names)}`);
      await frame.locator('h1').click();
      for (let i = 0; i <= sortable; i++) await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      // The panel redraws on the next frame (waitForFunction would need eval, which the panel's CSP forbids).
      let sorted = await frame.evaluate<Stop>(FOCUSED);
      for (let i = 0; i < 20 && sorted.sort !== 'descending'; i++) {
        await page.waitForTimeout(100);
        sorted = await frame.evaluate<Stop>(FOCUSED);
      }
      check(sorted.name.startsWith('Median time') && sorted.sort !== 'none' && sorted.sort !== stops[sortable]!.sort, `focus kept on the header, now sorted: ${JSON.stringify([stops[sortable], sorted])}`);
      check((await frame.locator('#chart-data table').count()) === 2, 'the chart\'s data as two tables for screen readers');
    }), 60_000);

    it('the HTML report opens where the panels are, titled apart, charting the step the panel charts as the plan numbers it', step('h100-html-report', async () => {
      await h100Panel();
      await historyMenu('matmul_naive', 'Open HTML report');
      await tab('HTML report: matmul_naive').waitFor({ timeout: 15_000 });
      await checkCodeAbovePanels('the HTML report');
      check((await page.locator('.editor-group-container').nth(1).locator('.tab', { hasText: 'HTML report: matmul_naive' }).count()) === 1, 'the HTML report is a tab of the panels\' group');
      const report = await panelFrame(page, '#report #performance', 30_000);
      // The accepted step 2, as the panel shows it (step 1, rejected, had as many configurations, all failed).
      const summary = await report.locator('#performance .chart-summary').innerText();
      check(summary.includes('configuration(s) of "Shared-memory tiling": 2 timed, 0 without a time'), `the chart shows step 2's configurations, got ${summary}`);
      // The summary's counts say what they count: every step's configurations, and the charted step's, as the chart.
      const counts = [await report.locator('#summary #configurations').innerText(), await report.locator('#summary #charted-configurations').innerText()].map((t) => t.replace(/\s+/g, ' ').trim());
      check(JSON.stringify(counts) === JSON.stringify(['4 configurations, all steps', '2 configurations of step 2, charted below']), `the summary's counts, got ${JSON.stringify(counts)}`);
      const canvas = report.locator('#performance canvas');
      const tooltip = report.locator('#performance .chart-tooltip');
      await canvas.focus();
      for (let i = 0; i < 6 && !/^Step \d/.test(await tooltip.innerText().catch(() => '')); i++) await page.keyboard.press('ArrowRight');
      const point = await tooltip.innerText();
      check(point.startsWith('Step 2: Shared-memory tiling'), `the accepted step is step 2, as the plan numbers it, got ${JSON.stringify(point)}`);
      const times = await report.locator('#device dl.facts').innerText();
      check(/Times\s+329 µs \(baseline\) → 240 µs \(best\)/.test(times), `the Times row gives the times, got ${JSON.stringify(times)}`);
      // Asked again: the same tab comes to the front.
      await historyMenu('matmul_naive', 'Open HTML report');
      await page.waitForTimeout(300);
      check((await tab('HTML report: matmul_naive').count()) === 1, 'one HTML report tab');
      await tab('HTML report: matmul_naive').first().click();
      await palette('View: Close Editor');
      await tab('HTML report: matmul_naive').waitFor({ state: 'detached', timeout: 10_000 });
    }), 90_000);

    it('an export says where it went, with a button that opens it', step('h100-export', async () => {
      await historyMenu('matmul_naive', 'Export as JSON report');
      const dialog = page.locator('.quick-input-widget input');
      await dialog.waitFor({ state: 'visible', timeout: 10_000 });
      const name = `matmul_naive-${H100_SESSION}-report.json`;
      for (let i = 0; i < 25 && !(await dialog.inputValue()).endsWith(`/${name}`); i++) await page.waitForTimeout(200);
      await page.keyboard.press('Enter');
      const toast = page.locator('.notification-toast', { hasText: `Exported to ${name}` });
      await toast.waitFor({ timeout: 15_000 });
      check(existsSync(join(o.workspace, name)), `${name} written`);
      await toast.locator('.monaco-button', { hasText: 'Open' }).click();
      await tab(name).waitFor({ timeout: 15_000 });
      await page.locator('.monaco-editor .view-line', { hasText: `"id": "${H100_SESSION}"` }).first().waitFor({ timeout: 10_000 });
      await palette('View: Close Editor');
      // As a Kernel Tuner cache: its accepted step's configurations, the problem size as its test named it.
      await historyMenu('matmul_naive', 'Export as Kernel Tuner cache');
      await dialog.waitFor({ state: 'visible', timeout: 10_000 });
      const cacheName = `matmul_naive-${H100_SESSION}-cache.json`;
      for (let i = 0; i < 25 && !(await dialog.inputValue()).endsWith(`/${cacheName}`); i++) await page.waitForTimeout(200);
      await page.keyboard.press('Enter');
      await page.locator('.notification-toast', { hasText: `Exported to ${cacheName}` }).waitFor({ timeout: 15_000 });
      const cache = JSON.parse(readFileSync(join(o.workspace, cacheName), 'utf8')) as { kernel_name: string; problem_size: unknown; tune_params_keys: string[]; cache: Record<string, unknown> };
      check(cache.kernel_name === 'matmul_naive' && JSON.stringify(cache.problem_size) === '["N","M"]', `the cache's header, got ${JSON.stringify({ ...cache, cache: undefined })}`);
      check(Object.keys(cache.cache).length === 2 && cache.tune_params_keys.includes('block_size_x'), `the accepted step's configurations, got ${JSON.stringify(cache)}`);
      await clearNotifications();
    }), 60_000);

    it('the H100 proposal in the editor: the file\'s lens line and each change\'s, Escape, Reject All, Accept All and Undo, checked on the saved file', step('h100-proposal', async () => {
      const frame = await h100Panel();
      await frame.locator('#show-diff').click();
      await lens('Accept All').waitFor({ timeout: 30_000 });
      await page.locator('.monaco-editor .view-line', { hasText: '__shared__ float As[block_size_y][block_size_x];' }).first().waitFor({ timeout: 10_000 });
      // The file's actions have the first lens line to themselves (the first change starts on the file's first line).
      // VS Code draws a lens line empty first and fills it when the lens resolves: read once all five changes' are filled.
      const readLensLines = () => page.locator('.codelens-decoration').evaluateAll((els) => els.map((e) => Array.from(e.querySelectorAll('a'), (a) => (a.textContent ?? '').trim())));
      let lensLines = await readLensLines();
      for (let i = 0; i < 50 && lensLines.filter((line) => line[0] === 'Accept').length < 5; i++) {
        await page.waitForTimeout(200);
        lensLines = await readLensLines();
      }
      const fileLine = lensLines.find((line) => line.some((t) => t.startsWith('Accept All')));
      check(JSON.stringify(fileLine) === JSON.stringify(['Accept All (5)', 'Reject All', 'Side by side']), `the file's lens line, got ${JSON.stringify(lensLines)}`);
      check(lensLines.filter((line) => line[0] === 'Accept').length === 5, `each of the 5 changes has its own lens line, got ${JSON.stringify(lensLines)}`);
      await clearNotifications();
      await palette('View: Focus First Editor Group');
      await page.keyboard.press('Control+Home');
      await page.waitForTimeout(500);
      await readmeShot('inline-proposal');
      // Escape on a new line rejects that change only (the status bar counts the changes left).
      const left = (text: string) => page.locator('.statusbar-item', { hasText: text }).first().waitFor({ timeout: 10_000 });
      await left('5 changes to review');
      const newLine = page.locator('.monaco-editor .view-line', { hasText: '__shared__ float As[block_size_y][block_size_x];' }).first();
      await newLine.click();
      // Escape acts once the cursor's context key has followed the click: pressed again until it has.
      for (let attempt = 1; ; attempt++) {
        await page.keyboard.press('Escape');
        if (await newLine.waitFor({ state: 'detached', timeout: 2_000 }).then(() => true, () => false)) break;
        check(attempt < 5, 'Escape rejects the change at the cursor');
      }
      await left('4 changes to review');
      await lens('Reject All').click();
      await lens('Accept All').waitFor({ state: 'detached', timeout: 10_000 });
      await save(h100.original, 'after Reject All the file is byte for byte the original');
      await frame.locator('#show-diff').click();
      await lens('Accept All').click();
      await lens('Accept All').waitFor({ state: 'detached', timeout: 10_000 });
      await save(h100.finalCode, 'after Accept All the file is the proposal');
      await page.keyboard.press('Control+Z');
      await save(h100.original, 'after one Undo the file is the original');
    }), 90_000);

    it('Accept on the first change, then Undo: the review is back with that change pending, its file\'s lens line in view', step('h100-undo-accept', async () => {
      const frame = await h100Panel();
      await frame.locator('#show-diff').click();
      await lens('Accept All').waitFor({ timeout: 30_000 });
      const left = (text: string) => page.locator('.statusbar-item', { hasText: text }).first().waitFor({ timeout: 10_000 });
      await left('5 changes to review');
      await page.locator('.codelens-decoration a', { hasText: /^\s*Accept\s*$/ }).first().click();
      await left('4 changes to review');
      await page.keyboard.press('Control+Z');
      await left('5 changes to review');
      await lens('Accept All (5)').waitFor({ timeout: 10_000 });
      for (let i = 0; i < 50 && (await acceptLensLines()) < 5; i++) await page.waitForTimeout(200);
      await shot('h100-undo-accept');
      check((await acceptLensLines()) === 5, 'each change has its lens line again');
      // The file's lens line is in view, below the breadcrumbs, not scrolled under them.
      const crumbs = (await page.locator('.editor-group-container .breadcrumbs-control').first().boundingBox())!;
      const fileLine = (await page.locator('.codelens-decoration', { hasText: 'Accept All (5)' }).first().boundingBox())!;
      check(fileLine.y >= crumbs.y + crumbs.height - 1, `the file's lens line below the breadcrumbs: ${JSON.stringify({ crumbs, fileLine })}`);
      await lens('Reject All').click();
      await lens('Accept All').waitFor({ state: 'detached', timeout: 10_000 });
      await save(h100.original, 'after Reject All the file is byte for byte the original');
    }), 90_000);

    it('the H100 report and proposal in the dark theme', step('h100-dark', async () => {
      await setTheme('Dark Modern', 'vs-dark');
      const frame = await h100Panel();
      await frame.locator('#show-diff').click();
      await lens('Accept All').waitFor({ timeout: 30_000 });
      await clearNotifications();
      await palette('View: Focus First Editor Group');
      await page.keyboard.press('Control+Home');
      await page.waitForTimeout(500);
      await readmeShot('inline-proposal-dark');
      await lens('Reject All').click();
      await lens('Accept All').waitFor({ state: 'detached', timeout: 10_000 });
      // The report alone, its group maximized.
      await tab('Report: matmul_naive').first().click();
      await palette('View: Toggle Maximize Editor Group');
      await frame.evaluate('window.scrollTo(0, 0)');
      await page.waitForTimeout(800);
      await readmeShot('panel-dark');
      await setTheme('Light Modern', 'vs');
      await page.waitForTimeout(500);
      await readmeShot('panel');
      await palette('View: Toggle Maximize Editor Group');
      await save(h100.original, 'the file after Reject All');
      // A clean window for the live session.
      await closeAllEditors();
    }), 90_000);

    it('an evolutionary session (recorded on the fake GPU) opens from the history as its lineage tree; a node shows its diff; a variant that is not the best is proposed in the editor', step('lineage', async () => {
      const { population, original } = evolution;
      const kept = population.variants.findLast((v) => v.child !== null && v.id !== population.bestId)!;
      const best = population.variants.find((v) => v.id === population.bestId)!;
      const markers = (code: string) => code.split('\n').filter((l) => l.startsWith('// FAKE_SPEED'));
      const onlyBest = markers(best.code).find((m) => !markers(kept.code).includes(m))!;
      const evolutionFile = () => readFileSync(join(o.workspace, 'evolution', 'saxpy.cu'), 'utf8');
      await sideBar('Kernel Tuner');
      await page.locator('.monaco-list-row', { hasText: 'saxpy' }).first().click({ timeout: 15_000 });
      const frame = await panelFrame(page, '#lineage svg.lineage', 30_000);
      check((await frame.locator('header').innerText()).includes('FAKE GPU recording'), 'the panel says the session was recorded on the fake GPU');
      const nodes = await frame.locator('g.lineage-node').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-node')));
      const rejected = population.children.filter((c) => c.rejection).map((c) => c.stepId);
      check(JSON.stringify([...nodes].sort()) === JSON.stringify([...population.variants.map((v) => v.id), ...rejected].sort()), `a node per variant and rejected child, got ${JSON.stringify(nodes)}`);
      check((await frame.locator(`g.lineage-node.best[data-node="${best.id}"]`).count()) === 1, 'the fastest variant is marked');
      await frame.locator(`g.lineage-node[data-node="${kept.id}"]`).click();
      const details = frame.locator('#lineage-details');
      await details.locator('h3', { hasText: `${kept.id}: ` }).waitFor({ timeout: 10_000 });
      const added = await details.locator('table.diff tr.add td.code').allInnerTexts();
      check(added.includes(markers(kept.code).at(-1)!), `the diff of ${kept.id} against ${kept.parents[0]} adds its line, got ${JSON.stringify(added)}`);
      await clearNotifications();
      await shot('lineage-01-tree');
      await details.locator('#propose-variant').click();
      await lens('Accept All').waitFor({ timeout: 30_000 });
      for (const marker of markers(kept.code)) await page.locator('.monaco-editor .view-line', { hasText: marker }).first().waitFor({ timeout: 10_000 });
      await page.locator('.monaco-editor .view-line', { hasText: `#define block_size_x ${kept.bestParams.block_size_x}` }).first().waitFor({ timeout: 10_000 });
      check((await page.locator('.monaco-editor .view-line', { hasText: onlyBest }).count()) === 0, `the proposal is ${kept.id}'s, not the fastest's (no "${onlyBest}")`);
      await shot('lineage-02-proposal');
      const saveEvolution = async (expected: (text: string) => boolean, what: string) => {
        await palette('View: Focus First Editor Group');
        await page.keyboard.press('Control+S');
        for (let i = 0; i < 50 && !expected(evolutionFile()); i++) await page.waitForTimeout(200);
        check(expected(evolutionFile()), what);
      };
      await lens('Reject All').click();
      await lens('Accept All').waitFor({ state: 'detached', timeout: 10_000 });
      await saveEvolution((text) => text === original, 'after Reject All the file is byte for byte what it was');
      // The report again (the file may have opened over it), the variant still shown.
      await tab('Report: saxpy').first().click();
      await (await panelFrame(page, '#lineage-details #propose-variant', 30_000)).locator('#propose-variant').click();
      await lens('Accept All').click();
      await lens('Accept All').waitFor({ state: 'detached', timeout: 10_000 });
      await saveEvolution((text) => markers(kept.code).every((m) => text.includes(m)) && !text.includes(onlyBest) && text.includes(`#define block_size_x ${kept.bestParams.block_size_x}`), `after Accept All the file is ${kept.id} with its values defined`);
      await page.keyboard.press('Control+Z');
      await saveEvolution((text) => text === original, 'after one Undo the file is what it was');
      await closeAllEditors();
    }), 120_000);

    it('with auto-save after a delay the proposal is a diff in the code\'s group: the file left, the proposal right, one line saying why', step('h100-autosave', async () => {
      await workspaceSettings({ ...liveSettings(), 'files.autoSave': 'afterDelay' });
      try {
        await sideBar('Explorer');
        await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'matmul_naive.cu' }).first().click({ timeout: 30_000 });
        const frame = await h100Panel();
        await frame.locator('#show-diff').click();
        const diff = page.locator('.monaco-diff-editor').first();
        await diff.waitFor({ timeout: 30_000 });
        // The right way round: the file's lines on the left (removed, red), the proposal's on the right (added, green).
        await diff.locator('.editor.modified .view-line', { hasText: '__shared__ float As[block_size_y][block_size_x];' }).first().waitFor({ timeout: 10_000 });
        check((await diff.locator('.editor.original .view-line', { hasText: '__shared__' }).count()) === 0, 'the proposal\'s new lines are not on the file\'s side');
        check((await diff.locator('.editor.original .view-line', { hasText: 'blockDim.y' }).count()) > 0, 'the file\'s own lines on the left');
        // In the code's group, above the report: the group that holds the diff is the first and the taller one.
        const groups = await page.locator('.editor-group-container').evaluateAll((els) => els.map((e) => ({ y: e.getBoundingClientRect().y, height: e.getBoundingClientRect().height, diff: e.querySelector('.monaco-diff-editor') !== null })));
        check(groups.length === 2 && groups[0]!.diff && groups[0]!.y < groups[1]!.y && groups[0]!.height >= groups[1]!.height, `the diff in the code's group, above the report: ${JSON.stringify(groups)}`);
        // One short line says why it is a diff, whole (a notification cuts what does not fit on its line).
        const why = page.locator('.notification-toast .notification-list-item-message', { hasText: 'Auto-save is on, so the proposal is shown as a diff.' }).first();
        await why.waitFor({ timeout: 10_000 });
        check(await why.evaluate((e) => e.scrollWidth <= e.clientWidth), 'the line is shown whole');
        await page.waitForTimeout(800);
        await readmeShot('proposal-autosave');
        // Accept All from the diff's title bar: the file takes the proposal and the diff closes.
        await page.locator('.editor-group-container .editor-actions .action-label[aria-label^="Accept all changes"]').first().click();
        await diff.waitFor({ state: 'detached', timeout: 10_000 });
        for (let i = 0; i < 50 && matmulFile() !== h100.finalCode; i++) await page.waitForTimeout(200);
        check(matmulFile() === h100.finalCode, 'auto-save wrote the accepted proposal');
        await palette('View: Focus First Editor Group');
        await page.keyboard.press('Control+Z');
        for (let i = 0; i < 50 && matmulFile() !== h100.original; i++) await page.waitForTimeout(200);
        check(matmulFile() === h100.original, 'one Undo, saved: the file as it was');
      } finally {
        await workspaceSettings(liveSettings());
      }
    }), 90_000);

    it('the settings of the model are under an "LLM" heading, never "Llm"', step('settings', async () => {
      // The settings editor alone in the window: its table of contents shows only the rows that fit.
      await closeAllEditors();
      await palette('Preferences: Open Settings (UI)');
      const search = page.locator('.settings-editor .settings-header .suggest-input-container textarea, .settings-editor .settings-header .suggest-input-container input').first();
      await search.waitFor({ timeout: 15_000 });
      // The extension's settings in the settings tree (not a search, where VS Code words each key's path): its
      // categories as headings, the model's settings under "LLM".
      await search.fill('');
      await page.locator('.settings-editor .settings-toc-container .monaco-list-row', { hasText: 'Extensions' }).first().click({ timeout: 15_000 });
      await page.keyboard.press('ArrowRight');
      await page.locator('.settings-editor .settings-toc-container .monaco-list-row', { hasText: 'LLM Kernel Tuner' }).first().click({ timeout: 15_000 });
      await page.locator('.settings-editor .setting-item-contents', { hasText: 'Which kind of LLM server rewrites the kernel.' }).first().waitFor({ timeout: 15_000 });
      const labels = await page.locator('.settings-editor .setting-item-contents', { hasText: 'Which kind of LLM server rewrites the kernel.' }).locator('.setting-item-title').evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim()));
      const headings = await page.locator('.settings-editor .settings-group-title-label').evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim()));
      check(labels.length > 0 && labels.every((l) => !/\bLlm\b/.test(l)), `no "Llm" in the settings' titles, got ${JSON.stringify({ labels, headings })}`);
      check(headings.includes('LLM'), `an "LLM" heading, got ${JSON.stringify({ labels, headings })}`);
      await shot('settings-llm');
      await palette('View: Close Editor');
    }), 60_000);

    it('the Getting Started walkthrough: each step\'s button runs its command; without a GPU, Tune parameters offers the recorded search', step('walkthrough', async () => {
      await closeAllEditors();
      await palette('Kernel Tuner: Get started');
      const steps = page.locator('.getting-started-step');
      await steps.first().waitFor({ timeout: 20_000 });
      const titles = await page.locator('.getting-started-step .step-title').evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim()));
      check(JSON.stringify(titles) === JSON.stringify(['Choose a model and check it', 'Check the GPU and the CUDA toolkit', 'Open an example and tune it', 'No GPU here? Replay a recorded search']), `the steps, got ${JSON.stringify(titles)}`);
      const button = async (stepTitle: string, label: string) => {
        await page.locator('.getting-started-step .step-title', { hasText: stepTitle }).first().click();
        await page.locator('.getting-started-step.expanded .monaco-button', { hasText: label }).first().click({ timeout: 10_000 });
      };
      await button('Check the GPU and the CUDA toolkit', 'Check the GPU and toolkit');
      await page.locator('.notification-toast', { hasText: 'the GPU is ready: Fake GPU (test double)' }).first().waitFor({ timeout: 30_000 });
      await clearNotifications();
      await readmeShot('walkthrough');
      await button('Open an example and tune it', 'Open the example');
      await page.locator('.monaco-editor .view-line', { hasText: '__global__ void matmul_naive' }).first().waitFor({ timeout: 20_000 });
      check(existsSync(join(o.workspace, 'kernel-tuner-example', 'cache.json')), 'the example is in the workspace, its cache beside it');
      await tab('Walkthrough: LLM Kernel Tuner').locator('.codicon-close').click();
      await tab('Walkthrough: LLM Kernel Tuner').waitFor({ state: 'detached', timeout: 10_000 });
      // No GPU: the message says so, leads to the GPU setup rather than to a setting, and offers the recorded search.
      writeFileSync(o.noGpuFile, '');
      try {
        await lens('Tune parameters').click({ timeout: 20_000 });
        const error = page.locator('.notification-toast', { hasText: 'No usable GPU' }).first();
        await error.waitFor({ timeout: 30_000 });
        const buttons = await error.locator('.monaco-button').evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim()));
        check(JSON.stringify(buttons) === JSON.stringify(['Replay cache.json', 'GPU setup', 'Show log']), `the message's buttons, got ${JSON.stringify(buttons)}`);
        await shot('no-gpu-offer');
        await clickUntilGone(error.locator('.monaco-button', { hasText: 'Replay cache.json' }), error);
        const frame = await panelFrame(page, '#app #device', 60_000, 'replayed from cache.json, no GPU');
        await frame.locator('#status', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
        check((await frame.locator('#device').innerText()) === 'NVIDIA H200 (replayed from cache.json, no GPU)', 'the device that recorded the search');
        await lens('Reject All').click({ timeout: 30_000 });
        await lens('Reject All').waitFor({ state: 'detached', timeout: 10_000 });
        // "GPU setup" opens the walkthrough at its GPU step.
        await lens('Tune parameters').click({ timeout: 20_000 });
        await clickUntilGone(error.locator('.monaco-button', { hasText: 'GPU setup' }), error);
        await page.locator('.getting-started-step.expanded .step-title', { hasText: 'Check the GPU and the CUDA toolkit' }).first().waitFor({ timeout: 20_000 });
      } finally {
        rmSync(o.noGpuFile, { force: true });
      }
      await closeAllEditors();
    }), 180_000);

    it('opens the kernel and shows the "Tune this kernel" lens', step('open', async () => {
      await closeAllEditors();
      await sideBar('Explorer');
      await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'saxpy.cu' }).first().click({ timeout: 30_000 });
      await page.waitForSelector('.monaco-editor .view-lines', { timeout: 20_000 });
      await page.locator('.codelens-decoration a', { hasText: 'Tune this kernel' }).first().waitFor({ timeout: 30_000 });
      await shot('01-kernel');
    }), 90_000);

    it('when the checks before a session fail, one plain message says why, and nothing else stays up', step('preflight', async () => {
      // An Ollama server that does not have the model.
      ollama = await startScriptedLlmServer([], { models: ['another-model'] });
      await workspaceSettings({ ...liveSettings(), 'kernelTuner.llm.provider': 'ollama', 'kernelTuner.llm.baseUrl': ollama.url });
      await clearNotifications();
      await page.locator('.codelens-decoration a', { hasText: 'Tune this kernel' }).first().click();
      const error = page.locator('.notification-toast', { hasText: 'The LLM cannot be used' });
      await error.waitFor({ timeout: 30_000 });
      const text = await error.locator('.notification-list-item-message').innerText();
      check(text === `The LLM cannot be used: model scripted-model is not available on Ollama at ${ollama.url}: run "ollama pull scripted-model".`, `the message, in plain words, got ${JSON.stringify(text)}`);
      // What showed the check in progress is gone with it.
      await page.locator('.statusbar-item', { hasText: 'checking' }).waitFor({ state: 'detached', timeout: 5_000 });
      check((await page.locator('.notification-toast', { hasText: 'checking' }).count()) === 0, 'no "checking" notification beside the error');
      await shot('01b-preflight');
      await clearNotifications();
      await workspaceSettings(liveSettings());
    }), 60_000);

    it('stores an API key; the first session asks before it goes to the server the workspace\'s settings name', step('api-key', async () => {
      await palette('Kernel Tuner: Set API key', { type: 'sk-test-key' });
      await page.locator('.notification-toast', { hasText: 'the API key was stored' }).waitFor({ timeout: 10_000 });
      await clearNotifications();
    }), 30_000);

    it('right-click inside the kernel → "Tune this kernel" opens the panel, which fills live', step('tune', async () => {
      const line = page.locator('.monaco-editor .view-line', { hasText: 'int i = blockIdx.x' }).first();
      const item = page.locator('.monaco-menu .action-item', { hasText: 'Tune this kernel' }).first();
      // The cursor outside the kernel first, settled there; then one right-click inside the kernel offers the item, and
      // the command takes the kernel where the click was (from the cursor's line it would ask which kernel instead).
      await page.locator('.monaco-editor .view-line', { hasText: '#include <cuda_runtime.h>' }).first().click();
      await page.locator('.statusbar-item', { hasText: 'Ln 2,' }).first().waitFor({ timeout: 5_000 });
      await line.click({ button: 'right' });
      await item.waitFor({ timeout: 5_000 });
      await shot('02-context-menu');
      await item.click();
      const ask = page.locator('.monaco-dialog-box', { hasText: 'Send your stored API key there too?' });
      await ask.waitFor({ timeout: 30_000 });
      check((await ask.innerText()).includes(`${server.url}/v1`), 'the question names the URL');
      await shot('02b-api-key-question');
      await clickUntilGone(ask.locator('.monaco-button', { hasText: 'Send the key' }), ask);
      const frame = await panelFrame(page, '#app header', 60_000, 'saxpy');
      await frame.locator('#plan vscode-collapsible').first().waitFor({ timeout: 60_000 });
      await shot('03-panel-running');
    }), 120_000);

    it('the panel shows the plan, the steps with their outcomes, a diff and the chart', step('panel', async () => {
      const frame = await panelFrame(page, '#app header', 30_000, 'saxpy');
      await frame.locator('#status', { hasText: 'completed' }).waitFor({ timeout: 90_000 });
      // The session's end puts its proposal in the editor, which takes the focus: nothing is typed before.
      await lens('Accept All').waitFor({ timeout: 30_000 });
      const chat = server.requests.filter((r) => r.method === 'POST');
      check(chat.length > 0 && chat.every((r) => r.headers.authorization === 'Bearer sk-test-key'), `the key went with every request, as the user said: ${JSON.stringify(chat.map((r) => r.headers.authorization))}`);
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
      const verified = await accepted.locator('table.configs tr.best td').last().innerText();
      check(/^input sets 1–2, timed launch(es)? [\d, –]+ and the last of \d+$/.test(verified), `the best configuration says which launches were verified, got ${verified}`);
      check((await frame.locator('#result pre.launch').innerText()).includes('dim3 block(512, 1, 1);'), 'the launch geometry is stated');
      await clearNotifications();
      await shot('04-panel-finished');
      await accepted.locator('vscode-button', { hasText: 'Side by side' }).click();
      await accepted.locator('table.diff-split').waitFor({ timeout: 5_000 });
      await accepted.locator('table.diff-split').scrollIntoViewIfNeeded();
      await shot('05-panel-step-diff');
    }), 120_000);
    it('hovering a point of the chart shows its tooltip; the chart exports as SVG and PNG', step('chart', async () => {
      const frame = await panelFrame(page, '#app header', 30_000, 'saxpy');
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
      await frame.locator('#performance').screenshot({ path: join(o.shots, 'chart-tooltip.png') });
      if (o.readmeShots) copyFileSync(join(o.shots, 'chart-tooltip.png'), join(o.readmeShots, 'chart-tooltip.png'));
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
      await clearNotifications();
      await palette('View: Focus First Editor Group');
      await page.keyboard.press('Control+Home');
      await acceptAll.waitFor({ timeout: 30_000 });
      await shot('06-inline-diff');
      await acceptAll.click();
      await page.locator('.monaco-editor .view-line', { hasText: '#define block_size_x 512' }).first().waitFor({ timeout: 10_000 });
      // The lenses go with the next CodeLens refresh.
      await page.locator('.codelens-decoration a', { hasText: 'Accept All' }).first().waitFor({ state: 'detached', timeout: 10_000 });
      await shot('07-accepted');
    }), 90_000);

    it('the Tuning History lists the session', step('history', async () => {
      await sideBar('Kernel Tuner');
      const item = page.locator('.monaco-list-row', { hasText: 'saxpy' }).first();
      await item.waitFor({ timeout: 15_000 });
      check((await item.innerText()).includes('1.67×'), 'the history item shows the speed-up');
      await item.locator('.monaco-tl-twistie').click();
      await page.locator('.monaco-list-row', { hasText: 'Tune the block size' }).first().waitFor({ timeout: 10_000 });
      await shot('08-history');
      // Theme colours only: the same panel in the dark and the high-contrast theme.
      for (const [theme, kind, name] of [
        ['Dark Modern', 'vs-dark', '09-dark'],
        ['Dark High Contrast', 'hc-black', '10-high-contrast'],
      ] as const) {
        await setTheme(theme, kind);
        await shot(name);
      }
      const cspErrors = consoleErrors.filter((e) => /Content Security Policy/i.test(e));
      check(cspErrors.length === 0, `no CSP violations, got ${cspErrors.join('\n')}`);
    }), 60_000);

    it('the session waits with an editable plan; Approve continues it to the end', step('approval', async () => {
      const script = JSON.parse(readFileSync(join(o.fixtures, 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] };
      approvalLlm = await startScriptedLlmServer(script.turns);
      await workspaceSettings({ ...liveSettings(), 'kernelTuner.llm.baseUrl': `${approvalLlm.url}/v1`, 'kernelTuner.approvePlan': true });
      // Back to the original kernel (undo the accepted change, or reject a proposal still open), then tune it from the lens.
      await palette('View: Focus First Editor Group');
      await page.keyboard.press('Control+Home');
      if (await lens('Reject All').isVisible()) await lens('Reject All').click();
      else await page.keyboard.press('Control+Z');
      await page.locator('.monaco-editor .view-line', { hasText: 'blockDim.x' }).first().waitFor({ timeout: 10_000 });
      await lens('Reject All').waitFor({ state: 'detached', timeout: 10_000 });
      await page.locator('.codelens-decoration a', { hasText: 'Tune this kernel' }).first().click();
      // A server the key has not been sent to: asked again; this time the key stays home.
      const ask = page.locator('.monaco-dialog-box', { hasText: 'Send your stored API key there too?' });
      await ask.waitFor({ timeout: 30_000 });
      check((await ask.innerText()).includes(`${approvalLlm.url}/v1`), 'the question names the new URL');
      await clickUntilGone(ask.locator('.monaco-button', { hasText: 'Do not send it' }), ask);
      const frame = await panelFrame(page, '#plan-editor', 60_000);
      const editor = frame.locator('#plan-editor');
      check((await editor.locator('li').count()) === 3, 'three steps to approve');
      await frame.locator('#approval').scrollIntoViewIfNeeded();
      await clearNotifications();
      await shot('11-plan-approval');
      await frame.locator('#approve').click();
      await frame.locator('#status', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
      check(approvalLlm.mismatches.length === 0, `the script matched: ${JSON.stringify(approvalLlm.mismatches)}`);
      const chat = approvalLlm.requests.filter((r) => r.method === 'POST');
      check(chat.length > 0 && chat.every((r) => !String(r.headers.authorization).includes('sk-test-key')), `the stored key went with no request: ${JSON.stringify(chat.map((r) => r.headers.authorization))}`);
    }), 120_000);
  });

  await runAll('UI test');
}
