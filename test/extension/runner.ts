/**
 * A minimal test runner with mocha's shape (describe / it / before / after, async tests, per-test timeouts), written
 * here because mocha is not a dependency of this project. It runs inside the VS Code extension host as the
 * `run()` of an @vscode/test-electron extensionTestsPath module, and in plain Node for the Playwright UI test.
 * Tests run in declaration order and stop at nothing: every failure is reported. The counts go to stdout (the
 * extension host's console) and, when KERNEL_TUNER_TEST_REPORT names a file, to that JSON file for scripts/test.mjs.
 */
import { appendFileSync } from 'node:fs';

type Fn = () => unknown | Promise<unknown>;

interface TestCase {
  title: string;
  fn: Fn;
  timeoutMs: number;
}

interface Suite {
  title: string;
  tests: TestCase[];
  before: Fn[];
  after: Fn[];
}

export interface TestResult {
  title: string;
  status: 'passed' | 'failed' | 'skipped';
  ms: number;
  error?: string;
}

const suites: Suite[] = [];
let current: Suite | undefined;

export function describe(title: string, body: () => void): void {
  const suite: Suite = { title, tests: [], before: [], after: [] };
  suites.push(suite);
  const outer = current;
  current = suite;
  try {
    body();
  } finally {
    current = outer;
  }
}

function suiteOf(what: string): Suite {
  if (!current) throw new Error(`${what} must be called inside describe()`);
  return current;
}

export function it(title: string, fn: Fn, timeoutMs = 60_000): void {
  suiteOf('it').tests.push({ title, fn, timeoutMs });
}

export function before(fn: Fn): void {
  suiteOf('before').before.push(fn);
}

export function after(fn: Fn): void {
  suiteOf('after').after.push(fn);
}

function withTimeout(fn: Fn, ms: number, title: string): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    Promise.resolve().then(fn),
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${title}`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * The tests to run: those whose "suite › test" title matches KERNEL_TUNER_TEST_GREP (a regular expression, for working
 * on a few tests: scripts/test-extension.mjs --grep), else all; the others are reported as skipped.
 */
function selected(title: string): boolean {
  const grep = process.env.KERNEL_TUNER_TEST_GREP;
  return !grep || new RegExp(grep).test(title);
}

/** Runs every registered suite; resolves with the results (it never rejects: callers decide what a failure means). */
export async function runAll(label: string): Promise<TestResult[]> {
  const results: TestResult[] = [];
  const log = (line: string) => console.log(line);
  for (const suite of suites) {
    // A suite none of whose tests is chosen is left out, hooks and all.
    const chosen = suite.tests.filter((test) => selected(`${suite.title} › ${test.title}`));
    for (const test of suite.tests.filter((t) => !chosen.includes(t))) results.push({ title: `${suite.title} › ${test.title}`, status: 'skipped', ms: 0 });
    if (chosen.length === 0) continue;
    log(`  ${suite.title}`);
    let setupError: string | undefined;
    for (const hook of suite.before) {
      try {
        await withTimeout(hook, 120_000, `${suite.title}: before`);
      } catch (error) {
        setupError = describeError(error);
        break;
      }
    }
    for (const test of chosen) {
      const title = `${suite.title} › ${test.title}`;
      if (setupError !== undefined) {
        results.push({ title, status: 'failed', ms: 0, error: `before hook failed: ${setupError}` });
        log(`    ✗ ${test.title} (before hook failed)`);
        continue;
      }
      const started = Date.now();
      try {
        await withTimeout(test.fn, test.timeoutMs, title);
        results.push({ title, status: 'passed', ms: Date.now() - started });
        log(`    ✓ ${test.title} (${Date.now() - started} ms)`);
      } catch (error) {
        results.push({ title, status: 'failed', ms: Date.now() - started, error: describeError(error) });
        log(`    ✗ ${test.title}\n${describeError(error).replace(/^/gm, '        ')}`);
      }
    }
    for (const hook of suite.after) {
      try {
        await withTimeout(hook, 60_000, `${suite.title}: after`);
      } catch (error) {
        log(`    after hook of ${suite.title} failed: ${describeError(error)}`);
      }
    }
  }
  const passed = results.filter((r) => r.status === 'passed').length;
  const failed = results.filter((r) => r.status === 'failed').length;
  log(`${label}: ${passed} passing, ${failed} failing`);
  const reportFile = process.env.KERNEL_TUNER_TEST_REPORT;
  // One JSON line per run, appended: the script that started VS Code may run several suites into one file.
  if (reportFile) appendFileSync(reportFile, `${JSON.stringify({ label, results })}\n`);
  return results;
}

/** The @vscode/test-electron contract: resolve when every test passed, reject otherwise. */
export async function runAsExtensionTests(label: string): Promise<void> {
  const results = await runAll(label);
  const failed = results.filter((r) => r.status === 'failed');
  if (failed.length > 0) throw new Error(`${failed.length} extension test(s) failed: ${failed.map((f) => f.title).join('; ')}`);
}
