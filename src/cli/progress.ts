// The progress of a tuning run on stderr: configurations done of the total, counted by outcome, the best time so far
// and the time left (from the search's own clock: wall time on a GPU, recorded GPU time in a replay). On a terminal a
// cli-progress bar redrawn in place; where stderr is a file or a pipe (CI logs, tests) plain lines, one every tenth of
// the way and one at the end.
import { Format, SingleBar, type Options } from 'cli-progress';
import type { SearchProgress } from '../tuner/strategies';
import { formatMeasured, objectiveValue, outcomeOf, TIME_OBJECTIVE, type ConfigResult, type Objective, type Outcome } from '../tuner/types';
import { ms } from './format';

/** Where the progress goes: stderr, or a test's stand-in with the same two properties. */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

export class TuningProgress {
  private readonly counts: Record<Outcome, number> = { ok: 0, stoppedEarly: 0, failed: 0, skipped: 0 };
  private done = 0;
  private total = 0;
  private best: string | undefined;
  private elapsedMs = 0;
  private bar: SingleBar | undefined;
  private lastTenth = -1;

  constructor(
    private readonly stream: ProgressStream = process.stderr,
    /** What the best is chosen by: its value is shown, with the time beside it when it is not the time. */
    private readonly objective: Objective = TIME_OBJECTIVE,
  ) {}

  /** One more configuration finished, with the search's progress as the strategy reports it. */
  add(result: ConfigResult, progress: Pick<SearchProgress, 'best' | 'total' | 'elapsedMs'>): void {
    this.counts[outcomeOf(result.status)]++;
    this.done++;
    this.total = Math.max(progress.total, this.done);
    this.best = progress.best && this.bestText(progress.best);
    this.elapsedMs = progress.elapsedMs;
    if (this.stream.isTTY) {
      const payload = this.payload();
      if (!this.bar) {
        this.bar = new SingleBar(this.barOptions());
        this.bar.start(this.total, this.done, payload);
      } else {
        this.bar.setTotal(this.total);
        this.bar.update(this.done, payload);
      }
      return;
    }
    const tenth = Math.floor((10 * this.done) / this.total);
    if (tenth !== this.lastTenth && this.done < this.total) {
      this.lastTenth = tenth;
      this.stream.write(`${this.line()}; ETA ${this.eta()}\n`);
    }
  }

  /** The closing state: the bar left on its last frame, or the last plain line. Call it however the run ended. */
  finish(): void {
    if (this.bar) {
      this.bar.update(this.done, this.payload());
      this.bar.stop();
      this.bar = undefined;
    } else if (this.done > 0 && !this.stream.isTTY) {
      this.stream.write(`${this.line()}\n`);
    }
  }

  /** "7 ok, 3 stopped early, 8 failed, 4 skipped" (skipped only when there are any). */
  outcomes(): string {
    const { ok, stoppedEarly, failed, skipped } = this.counts;
    return `${ok} ok, ${stoppedEarly} stopped early, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`;
  }

  private line(): string {
    return `${this.done}/${this.total} configurations: ${this.outcomes()}${this.best === undefined ? '' : `; best ${this.best}`}`;
  }

  private payload(): { outcomes: string; best: string; timeLeft: string } {
    return { outcomes: this.outcomes(), best: this.best === undefined ? 'no best yet' : `best ${this.best}`, timeLeft: this.eta() };
  }

  /** "1.234 ms", or "1.612 J (5.604 ms)" when the objective is not the time. */
  private bestText(best: ConfigResult): string | undefined {
    if (best.timeMs === undefined) return undefined;
    const value = objectiveValue(best, this.objective);
    if (this.objective.name === 'time' || value === undefined) return `${ms(best.timeMs)} ms`;
    return `${formatMeasured(this.objective.name, value)} (${ms(best.timeMs)} ms)`;
  }

  /** The time per configuration so far times the configurations left. */
  private eta(): string {
    return formatSeconds((this.elapsedMs / 1000 / this.done) * (this.total - this.done));
  }

  private barOptions(): Options {
    return {
      stream: this.stream,
      // {timeLeft} is ours (the search's clock), not cli-progress's wall-clock estimate, which knows nothing of a replay.
      format: '[{bar}] {value}/{total} | {outcomes} | {best} | ETA {timeLeft}',
      barsize: 24,
      barCompleteChar: '\u2588',
      barIncompleteChar: '\u2591',
      hideCursor: true,
    };
  }
}

/** 7s, 45s, 02m03s, 01h05m (cli-progress's wording, without its padding of seconds below a minute). */
function formatSeconds(seconds: number): string {
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : Format.TimeFormat(s, { autopaddingChar: '0' } as Options, 1);
}
