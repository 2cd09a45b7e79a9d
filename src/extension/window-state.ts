/**
 * What this window has open that VS Code does not bring back after a reload, in a JSON file in the workspace's storage
 * folder, written a moment after each change and at the end:
 * - the open reports (tuning panels), which the extension opens again itself (panel.ts says why not VS Code);
 * - the proposals under review: hot exit brings a dirty document back with the proposal's lines in it, and only the
 *   stored review says which lines are old and which are new.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ReviewState } from './proposal';

/** A report panel that was open: its session, and the kernel its title names. */
export interface OpenReport {
  sessionId: string;
  kernelName: string;
}

/** A review that was open in a document: the proposal's title and the review state of the document's text. */
export interface StoredReview {
  title: string;
  state: ReviewState;
}

interface WindowStateData {
  reports: OpenReport[];
  /** By document uri. */
  reviews: Record<string, StoredReview>;
}

/** Writes follow changes by this long: a burst of edits (typing in a reviewed document) is written once. */
const WRITE_DELAY_MS = 100;

function isReviewState(value: unknown): value is ReviewState {
  const s = value as ReviewState;
  if (!s || typeof s.text !== 'string' || typeof s.review !== 'number' || (s.eol !== '\n' && s.eol !== '\r\n') || !Array.isArray(s.pending) || typeof s.tally !== 'object') return false;
  return s.pending.every((h) => h && typeof h.hunk?.id === 'string' && 0 <= h.start && h.start <= h.mid && h.mid <= h.end && h.end <= s.text.length);
}

/** The file's data; empty when there is none, and (with `onProblem` told) when it cannot be read. */
function read(file: string | undefined, onProblem: (message: string) => void): WindowStateData {
  const empty: WindowStateData = { reports: [], reviews: {} };
  if (!file) return empty;
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch {
    return empty;
  }
  try {
    const data = JSON.parse(raw) as Partial<WindowStateData>;
    const reports = Array.isArray(data.reports) ? data.reports.filter((r) => typeof r?.sessionId === 'string' && typeof r.kernelName === 'string') : [];
    const reviews = Object.fromEntries(Object.entries(data.reviews ?? {}).filter(([, r]) => typeof r?.title === 'string' && isReviewState(r.state)));
    return { reports, reviews };
  } catch (error) {
    onProblem(`${file} is not readable (${error instanceof Error ? error.message : String(error)}); starting without it`);
    return empty;
  }
}

export class WindowState {
  private readonly data: WindowStateData;
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** `file`: undefined in a window without a workspace (nothing is kept then). */
  constructor(
    private readonly file: string | undefined,
    private readonly onProblem: (message: string) => void,
  ) {
    this.data = read(file, onProblem);
  }

  get reports(): readonly OpenReport[] {
    return this.data.reports;
  }

  setReports(reports: readonly OpenReport[]): void {
    this.data.reports = [...reports];
    this.schedule();
  }

  review(uri: string): StoredReview | undefined {
    return this.data.reviews[uri];
  }

  setReview(uri: string, review: StoredReview | undefined): void {
    if (review) this.data.reviews[uri] = review;
    else if (uri in this.data.reviews) delete this.data.reviews[uri];
    else return;
    this.schedule();
  }

  /** Writes now (a temporary file renamed over the old one, so a reader never sees half of it). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.file) return;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      writeFileSync(`${this.file}.tmp`, JSON.stringify(this.data));
      renameSync(`${this.file}.tmp`, this.file);
    } catch (error) {
      this.onProblem(`could not write ${this.file}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => this.flush(), WRITE_DELAY_MS);
  }
}
