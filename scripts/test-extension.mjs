#!/usr/bin/env node
// The extension's tests in a real VS Code: code-server 4.100.3 (VS Code 1.100.3, installed by
// scripts/install-code-server.sh into .tools/) driven by Playwright with Debian's Chromium.
//   1. extension tests, first window   (dist/extension-tests/suite.js, the @vscode/test-electron `run()` contract)
//   2. extension tests, after a reload (dist/extension-tests/suite-reload.js, same VS Code and browser profile)
//   2b. extension tests in a workspace without CUDA (dist/extension-tests/suite-activation.js: not activated by the start)
//   2c. extension tests in Restricted Mode (dist/extension-tests/suite-restricted.js: the same profile, Workspace
//      Trust on, a workspace that is not trusted)
//   3. the UI test a person would recognise (dist/extension-tests/ui.e2e.js), screenshots in test-results/, on the
//      extension as users get it: packaged with vsce and installed from the .vsix.
// Sessions run on the scripted LLM server and the fake GPU backend (the extension's test hook). Prints
// "N passed, N failed, N skipped" and writes test-results/extension-tests.json for scripts/test.mjs.
//   node scripts/test-extension.mjs [--no-build] [--only=tests|ui] [--grep=REGEX] [--update-screenshots]
// --update-screenshots: the UI test also writes the README's screenshots (media/screenshots/).
// --grep: only the tests whose "suite › test" title matches (the others are reported as skipped).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const args = new Set(process.argv.slice(2));
const only = [...args].find((a) => a.startsWith('--only='))?.slice('--only='.length);
const grep = [...args].find((a) => a.startsWith('--grep='))?.slice('--grep='.length);
// Read by the test runner in the extension host (code-server passes its environment on) and in this process (UI test).
if (grep) process.env.KERNEL_TUNER_TEST_GREP = grep;
const results = join(root, 'test-results');
const work = join(root, '.tmp', 'extension-tests');
const reportFile = join(work, 'report.jsonl');
// While this file exists, the test backend stands for a machine without a GPU (test/extension/test-backend.ts).
const noGpuFile = join(work, 'no-gpu');
const t0 = Date.now();
const log = (...a) => console.log(`[ext ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const problems = [];

function summaryAndExit() {
  const runs = existsSync(reportFile) ? readFileSync(reportFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const all = runs.flatMap((r) => r.results);
  const passed = all.filter((r) => r.status === 'passed').length;
  const failed = all.filter((r) => r.status === 'failed').length + problems.length;
  const skipped = all.filter((r) => r.status === 'skipped').length;
  for (const r of all.filter((x) => x.status === 'failed')) log(`FAILED ${r.title}\n${r.error}`);
  for (const p of problems) log(`problem: ${p}`);
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'extension-tests.json'), JSON.stringify({ passed, failed, skipped, problems, runs }, null, 2));
  console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(failed > 0 ? 1 : 0);
}

let codeServer;
try {
  codeServer = execFileSync('bash', [join(root, 'scripts', 'install-code-server.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop();
} catch (error) {
  problems.push(`code-server could not be installed: ${error.message.split('\n')[0]}`);
  summaryAndExit();
}
if (!args.has('--no-build')) execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--js-only'], { stdio: 'inherit' });
const bundles = join(root, 'dist', 'extension-tests');

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A code-server with its own profile, XDG dirs and TMPDIR, so nothing lands in ~ or /tmp. `trust`: Workspace Trust on
 * (a folder is then untrusted, in Restricted Mode, and nothing asks about it); otherwise off, every folder trusted.
 */
async function startCodeServer(name, env, { trust = false } = {}) {
  const dir = join(work, name);
  for (const d of ['user-data', 'extensions', 'xdg-config', 'xdg-data', 'tmp']) mkdirSync(join(dir, d), { recursive: true });
  const port = await freePort();
  writeFileSync(join(dir, 'config.yaml'), `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  // Settings of the profile: no welcome page, no trust prompt, no surveys; the test windows stay quiet. Auto-save off,
  // as desktop VS Code has it (VS Code for the Web defaults to afterDelay; the extension test of that sets it itself).
  mkdirSync(join(dir, 'user-data', 'User'), { recursive: true });
  writeFileSync(
    join(dir, 'user-data', 'User', 'settings.json'),
    JSON.stringify({ 'workbench.startupEditor': 'none', 'security.workspace.trust.enabled': trust, 'security.workspace.trust.startupPrompt': 'never', 'telemetry.telemetryLevel': 'off', 'workbench.tips.enabled': false, 'extensions.autoCheckUpdates': false, 'window.restoreWindows': 'all', 'workbench.colorTheme': 'Default Light Modern', 'files.autoSave': 'off', 'git.enabled': false, 'git.openRepositoryInParentFolders': 'never' }),
  );
  const child = spawn(
    codeServer,
    ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check', ...(trust ? [] : ['--disable-workspace-trust']), '--user-data-dir', join(dir, 'user-data'), '--extensions-dir', join(dir, 'extensions'), '--config', join(dir, 'config.yaml')],
    {
      env: { ...process.env, XDG_CONFIG_HOME: join(dir, 'xdg-config'), XDG_DATA_HOME: join(dir, 'xdg-data'), TMPDIR: join(dir, 'tmp'), KERNEL_TUNER_TEST_REPORT: reportFile, KERNEL_TUNER_TEST_NO_GPU: noGpuFile, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output = [];
  child.stdout.on('data', (d) => output.push(String(d)));
  child.stderr.on('data', (d) => output.push(String(d)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode}:\n${output.join('')}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300) throw new Error(`code-server did not start in 60 s:\n${output.join('')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  log(`code-server ${name} on ${base}`);
  // Stopped when it has exited (a server after it may use the same profile), or 10 s after being asked to.
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', resolve);
    setTimeout(resolve, 10_000);
    child.kill('SIGTERM');
  });
  return { base, dir, child, output, stop };
}

function workspace(name) {
  const ws = join(work, name);
  mkdirSync(ws, { recursive: true });
  cpSync(join(root, 'test', 'extension', 'workspace'), ws, { recursive: true });
  return ws;
}

const { chromium } = require('playwright-core');
const browserArgs = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

async function launchBrowser(profile) {
  return chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1600, height: 1000 }, args: browserArgs });
}

/**
 * A browser console line as the extension host wrote it. VS Code's console logger styles a level prefix
 * (`console.log('%c INFO', 'color: #33f', message)`), which Playwright's text() gives as "%c INFO color: #33f message".
 */
function plainConsoleText(text) {
  return text.replace(/%c/g, '').replace(/^\s*(?:TRACE|DEBUG|INFO|WARN|ERROR)\s+color:\s*\S+ ?/, '');
}

/** One test-electron style run: the workbench loads the extension and its tests, the exit code arrives by codeAutomationExit. */
async function runExtensionTests(server, ws, profile, testsModule, label) {
  const context = await launchBrowser(profile);
  const page = context.pages()[0] ?? (await context.newPage());
  const authority = new URL(server.base).host;
  let resolveExit;
  const exited = new Promise((r) => (resolveExit = r));
  await page.exposeFunction('codeAutomationExit', (code) => resolveExit(code));
  await page.exposeFunction('codeAutomationLog', () => undefined);
  page.on('console', (m) => {
    const text = plainConsoleText(m.text());
    if (/✓|✗|passing|failing|after hook|timed out|Error|restored/.test(text)) console.log(`  [${label}] ${text.slice(0, 2000)}`);
  });
  const payload = JSON.stringify([
    ['extensionDevelopmentPath', `vscode-remote://${authority}${root}`],
    ['extensionTestsPath', `vscode-remote://${authority}${testsModule}`],
    ['skipWelcome', 'true'],
  ]);
  await page.goto(`${server.base}/?folder=${encodeURIComponent(ws)}&payload=${encodeURIComponent(payload)}`);
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 240_000))]);
  mkdirSync(results, { recursive: true });
  await page.screenshot({ path: join(results, `extension-tests-${label}.png`) }).catch(() => undefined);
  // Let the workbench save its state (the open editors and report tabs the reload suite expects back): VS Code in a
  // browser flushes its storage when its page is hidden and when it unloads, so hide it (another tab in front), give
  // the flush time, then close it as a user does. Closing the browser context alone can lose the last state.
  const front = await context.newPage();
  await front.bringToFront();
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  page.on('dialog', (dialog) => void dialog.accept().catch(() => undefined));
  await page.close({ runBeforeUnload: true }).catch(() => undefined);
  await new Promise((resolve) => page.once('close', resolve) && setTimeout(resolve, 5_000));
  await context.close();
  log(`${label}: exit ${code}`);
  if (code !== 0) {
    const ran = existsSync(reportFile) && readFileSync(reportFile, 'utf8').includes(`"label":"extension tests`);
    if (code === 'timeout' || !ran) problems.push(`${label}: the extension host ended with ${code} before reporting (code-server log: ${server.output.join('').slice(-1500)})`);
  }
}

try {
  if (only !== 'ui') {
    const server = await startCodeServer('vscode', { KERNEL_TUNER_TEST_BACKEND: join(bundles, 'test-backend.js') });
    const ws = workspace('ws');
    const profile = join(work, 'chromium-profile');
    try {
      await runExtensionTests(server, ws, profile, join(bundles, 'suite.js'), 'first-window');
      await runExtensionTests(server, ws, profile, join(bundles, 'suite-reload.js'), 'after-reload');
      const withoutCuda = join(work, 'ws-no-cuda');
      mkdirSync(withoutCuda, { recursive: true });
      writeFileSync(join(withoutCuda, 'README.md'), 'A workspace without CUDA files.\n');
      await runExtensionTests(server, withoutCuda, join(work, 'chromium-profile-no-cuda'), join(bundles, 'suite-activation.js'), 'no-cuda');
    } finally {
      await server.stop();
    }
    // The same profile (its history) in a new server with Workspace Trust on, a new folder: Restricted Mode.
    const restricted = await startCodeServer('vscode', { KERNEL_TUNER_TEST_BACKEND: join(bundles, 'test-backend.js') }, { trust: true });
    try {
      await runExtensionTests(restricted, workspace('ws-restricted'), join(work, 'chromium-profile-restricted'), join(bundles, 'suite-restricted.js'), 'restricted');
    } finally {
      await restricted.stop();
    }
  }
  if (only !== 'tests') {
    const vsix = join(work, 'llm-kernel-tuner.vsix');
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--no-dependencies', '--no-rewrite-relative-links', '--allow-missing-repository', '--skip-license', '--target', 'linux-x64', '--out', vsix],
      { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const server = await startCodeServer('vscode-ui', { KERNEL_TUNER_TEST_BACKEND: join(bundles, 'test-backend.js'), KERNEL_TUNER_TEST_DELAY_MS: '150' });
    execFileSync(codeServer, ['--user-data-dir', join(server.dir, 'user-data'), '--extensions-dir', join(server.dir, 'extensions'), '--install-extension', vsix], {
      env: { ...process.env, XDG_CONFIG_HOME: join(server.dir, 'xdg-config'), XDG_DATA_HOME: join(server.dir, 'xdg-data'), TMPDIR: join(server.dir, 'tmp') },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    log(`installed ${vsix}`);
    try {
      process.env.KERNEL_TUNER_TEST_REPORT = reportFile;
      const ui = require(join(bundles, 'ui.e2e.js'));
      await ui.runUiTest({
        base: server.base,
        workspace: workspace('ws-ui'),
        fixtures: join(root, 'test', 'fixtures'),
        noGpuFile,
        shots: results,
        userData: join(server.dir, 'user-data'),
        ...(args.has('--update-screenshots') && { readmeShots: join(root, 'media', 'screenshots') }),
        launchBrowser: () => launchBrowser(join(work, 'chromium-profile-ui')),
        log,
      });
    } finally {
      await server.stop();
    }
  }
} catch (error) {
  problems.push(error.stack ?? String(error));
}
summaryAndExit();
