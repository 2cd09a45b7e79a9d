// What the GPU tests of real files assert about a search, and how they print it: no configuration of a correct kernel,
// launched as its host code (or its spec) launches it, may fail.
import assert from 'node:assert/strict';
import type { ConfigStatus, StopReason, TuneResult } from '../../src/tuner/types';

/** What no configuration of a correct kernel may end with. */
export const FAILURES: readonly ConfigStatus[] = ['wrong_result', 'fault', 'compile_error', 'timeout', 'launch_error', 'exceeds_device_limits'];

/** The result as a table for assertion messages: compiler, reference, then one line per configuration. */
export function report(title: string, result: TuneResult): string {
  const lines = result.results.map((r) => {
    const time = r.timeMs === undefined ? '' : ` ${r.timeMs.toFixed(4)} ms`;
    const why = r.error ? ` -- ${r.error.message.slice(0, 400)}` : r.note ? ` -- ${r.note}` : '';
    return `    ${r.key}: ${r.status}${time}${why}`;
  });
  const compiler = result.compiler ? `${result.compiler.backend}${result.compiler.note ? ` (${result.compiler.note})` : ''}` : 'not recorded';
  return [`${title}: compiler ${compiler}, reference ${JSON.stringify(result.reference?.config)}`, ...lines].join('\n');
}

/** Asserts a search that ended as `stopReason` with a correct best and no failed configuration. */
export function assertAllCorrect(result: TuneResult, message: string, stopReason: StopReason = 'completed'): void {
  assert.equal(result.stopReason, stopReason, message);
  assert.ok(result.best, `no best configuration\n${message}`);
  assert.equal(result.best.status, 'ok', message);
  for (const r of result.results) {
    assert.ok(!FAILURES.includes(r.status), `${r.key} ended as ${r.status}\n${message}`);
    assert.ok(r.status === 'ok' || r.status === 'stopped_early', `${r.key}: ${r.status}\n${message}`);
  }
  assert.ok(result.compiler?.backend === 'nvrtc' || result.compiler?.backend === 'nvcc', `the compiler is recorded\n${message}`);
}
