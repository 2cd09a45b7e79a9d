// The tuning progress of the CLI, on a terminal (cli-progress redrawing one line) and in a log (plain lines).
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { TuningProgress } from '../../src/cli/progress';
import type { ConfigResult, ConfigStatus } from '../../src/tuner/types';

/** A stderr stand-in that keeps what is written; `tty` makes it look like a terminal of 160 columns. */
function capture(tty: boolean) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as Writable & { isTTY?: boolean; columns?: number };
  if (tty) Object.assign(stream, { isTTY: true, columns: 160 });
  return { stream, text: () => chunks.join('') };
}

const result = (status: ConfigStatus, timeMs?: number): ConfigResult => ({ config: {}, key: status, status, ...(timeMs !== undefined && { timeMs }) });

/** Ten configurations, 1 s of search each: ok, stopped early, failed and skipped ones. */
const RUN: ConfigResult[] = [
  result('exceeds_device_limits'),
  result('ok', 4),
  result('stopped_early', 9),
  result('compile_error'),
  result('ok', 2),
  result('wrong_result'),
  result('stopped_early', 5),
  result('ok', 3),
  result('timeout'),
  result('ok', 2.5),
];

function feed(progress: TuningProgress) {
  let best: ConfigResult | undefined;
  RUN.forEach((r, i) => {
    if (r.status === 'ok' && (!best || r.timeMs! < best.timeMs!)) best = r;
    progress.add(r, { best, total: RUN.length, elapsedMs: (i + 1) * 1000 });
  });
  progress.finish();
}

describe('TuningProgress', () => {
  it('writes plain lines where stderr is no terminal: counts apart, stopped early is no failure, best, time left', () => {
    const out = capture(false);
    feed(new TuningProgress(out.stream));
    const lines = out.text().trimEnd().split('\n');
    expect(lines[0]).toBe('1/10 configurations: 0 ok, 0 stopped early, 0 failed, 1 skipped; ETA 9s');
    expect(lines).toContain('5/10 configurations: 2 ok, 1 stopped early, 1 failed, 1 skipped; best 2.000 ms; ETA 5s');
    expect(lines.at(-1)).toBe('10/10 configurations: 4 ok, 2 stopped early, 3 failed, 1 skipped; best 2.000 ms');
    // One line per tenth of the way, the last one once: no terminal control characters.
    expect(lines).toHaveLength(10);
    expect(out.text()).not.toMatch(/\u001b|\r/);
  });

  it('redraws one bar in place on a terminal and leaves its last frame', () => {
    const out = capture(true);
    feed(new TuningProgress(out.stream));
    const text = out.text();
    // cli-progress hides the cursor while drawing and gives it back; frames return to column 1 instead of new lines.
    expect(text.startsWith('\u001b7\u001b[?25l')).toBe(true);
    expect(text).toContain('\u001b[?25h');
    const frames = text.split('\u001b[1G').slice(1).map((f) => f.replace(/\u001b\[[0-9;?]*[A-Za-z]|\u001b[78]/g, '').trimEnd());
    expect(frames[0]).toBe('[██░░░░░░░░░░░░░░░░░░░░░░] 1/10 | 0 ok, 0 stopped early, 0 failed, 1 skipped | no best yet | ETA 9s');
    expect(frames.at(-1)).toBe('[████████████████████████] 10/10 | 4 ok, 2 stopped early, 3 failed, 1 skipped | best 2.000 ms | ETA 0s');
    expect(text.split('\n')).toHaveLength(2);
  });

  it('writes nothing for a run without results', () => {
    for (const tty of [false, true]) {
      const out = capture(tty);
      new TuningProgress(out.stream).finish();
      expect(out.text()).toBe('');
    }
  });
});
