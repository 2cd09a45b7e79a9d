/**
 * Webview code in Chromium (playwright-core with Debian's chromium; tests skip where it is not installed): the code
 * bundled by esbuild as one inline script, in a page under the panel's kind of CSP (scripts and styles by nonce only),
 * with every console error, CSP report and uncaught error collected.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const root = join(__dirname, '..', '..');

export const hasChromium = existsSync(CHROMIUM);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

/** `entry` (TypeScript, imports relative to the repository root) bundled for the browser. */
export async function bundleForPage(entry: string): Promise<string> {
  const built = await esbuild.build({ stdin: { contents: entry, resolveDir: root, loader: 'ts' }, bundle: true, format: 'iife', platform: 'browser', write: false });
  return built.outputFiles[0]!.text;
}

/** A page running `script` (and `style`) under the CSP; `problems` fills with what went wrong in it. */
export async function pageUnderCsp(browser: Browser, script: string, options: { style?: string; viewport?: { width: number; height: number } } = {}): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage(options.viewport && { viewport: options.viewport });
  const problems: string[] = [];
  page.on('console', (m) => (m.type() === 'error' || m.text().includes('Content Security Policy')) && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  await page.setContent(
    `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-n'; style-src 'nonce-n'">` +
      (options.style === undefined ? '' : `<style nonce="n">${options.style}</style>`) +
      `</head><body><script nonce="n">${script.replace(/<\/script/g, '<\\/script')}</script></body></html>`,
  );
  return { page, problems };
}
