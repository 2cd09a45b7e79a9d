/**
 * Tuning history: one plain JSON file per session (`<id>.json`) under a root directory (the extension's
 * globalStorage), plus `.index.json`, a cache of the list summaries.
 *
 * - Every write is atomic (temp file, fsync, rename), so a crash leaves the old or the new file, never a torn one.
 * - Files are validated with zod on read; a corrupt or foreign file is skipped by `list()` and reported, never fatal.
 * - The index is only a cache: each summary carries the size, mtime and inode of the file it came from; `list()` re-reads
 *   any file whose stat differs, is new, or is missing from the index. A crash between writing a session and the
 *   index, or a second VS Code window writing the same directory, therefore costs a re-read, never a stale list.
 * - Writes of one id are serialized in this process (save/update/delete queue per id); across processes the last
 *   rename wins, whole.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { KT_ERROR_OF } from '../../tuner/cache/format.js';
import { configKey, type ParamValue } from '../../tuner/types.js';
import { removeStaleTempFiles, writeFileAtomic } from './fs-atomic.js';
import { LlmExchangeSchema } from '../llm/exchange.js';
import { SessionSettingsSchema } from '../session/session-settings.js';

export const SESSION_STATUSES = ['running', 'completed', 'failed', 'cancelled', 'interrupted'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

export const STEP_STATUSES = ['pending', 'running', 'accepted', 'kept', 'rejected', 'skipped', 'failed'] as const;

const finiteNumber = z.number().refine(Number.isFinite, 'must be a finite number');
const isoDate = z.iso.datetime({ offset: true });

/** Session ids become file names: a conservative portable set, and never a dot first (reserved for our own files). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A new session id: sortable by time, unique (20261122T140512Z-9f2c4a1b). */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${randomBytes(4).toString('hex')}`;
}

export const HistoryStepSchema = z.looseObject({
  /** The strategy's id of the step ("3", "block_size_x"): a branch can start again from it. */
  stepId: z.string().optional(),
  title: z.string(),
  status: z.enum(STEP_STATUSES),
  timeMs: finiteNumber.optional(),
  improvementPct: finiteNumber.optional(),
});

/** Where a branch comes from: the session it branched off and the step it started again from. */
export const HistoryParentSchema = z.object({
  id: z.string().regex(SESSION_ID_PATTERN, 'must match SESSION_ID_PATTERN'),
  threadId: z.string(),
  stepId: z.string(),
  stepTitle: z.string().optional(),
  /** The kernel the user gave the step instead of the one it started from (the whole file). */
  editedCode: z.string().optional(),
});
export type HistoryParent = z.infer<typeof HistoryParentSchema>;

export const HistoryEntrySchema = z.object({
  id: z.string().regex(SESSION_ID_PATTERN, 'must match SESSION_ID_PATTERN'),
  kernelName: z.string(),
  filePath: z.string(),
  fileUri: z.string().optional(),
  createdAt: isoDate,
  updatedAt: isoDate,
  device: z.looseObject({ name: z.string() }),
  status: z.enum(SESSION_STATUSES),
  baselineTimeMs: finiteNumber.optional(),
  bestTimeMs: finiteNumber.optional(),
  speedup: finiteNumber.optional(),
  steps: z.array(HistoryStepSchema),
  originalCode: z.string(),
  finalCode: z.string().optional(),
  /** Free JSON (the engine's report). `export(..., 'kernel-tuner-cache')` reads `report.configurations`. */
  report: z.unknown().optional(),
  /** LangGraph thread id of the session, to resume it from the checkpointer. */
  threadId: z.string(),
  error: z.string().optional(),
  /** Process that last wrote the entry; lets startup tell a crashed 'running' session from one alive in another window. */
  ownerPid: z.number().int().positive().optional(),
  /** Set for a branch of another session. */
  parent: HistoryParentSchema.optional(),
  /** Set for a session that replayed another one's recorded model answers. */
  replayOf: z.string().regex(SESSION_ID_PATTERN, 'must match SESSION_ID_PATTERN').optional(),
  /** The settings the session's graph was built with: what resuming, branching and replaying it need. */
  run: SessionSettingsSchema.optional(),
  /** Every request to the model and its answer, in order (secrets removed): what a replay serves again. */
  llmExchanges: z.array(LlmExchangeSchema).optional(),
});

export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;
export type HistoryStep = z.infer<typeof HistoryStepSchema>;

/** What the sidebar needs per session: everything but the code, the steps, the report and the recording. */
export const HistorySummarySchema = HistoryEntrySchema.omit({
  originalCode: true,
  finalCode: true,
  report: true,
  steps: true,
  ownerPid: true,
  parent: true,
  run: true,
  llmExchanges: true,
}).extend({
  stepCount: z.number().int().nonnegative(),
  parent: HistoryParentSchema.omit({ editedCode: true }).optional(),
  /** It has its settings and model exchanges stored: it can be replayed. */
  replayable: z.boolean().optional(),
});

export type HistorySummary = z.infer<typeof HistorySummarySchema>;

export interface HistoryProblem {
  /** File that could not be used. */
  file: string;
  message: string;
}

export interface HistoryListResult {
  /** Newest first (by createdAt, then id). */
  sessions: HistorySummary[];
  /** Files skipped because they are not valid sessions. */
  problems: HistoryProblem[];
}

export type HistoryChange = { type: 'saved' | 'deleted'; id: string };

export interface Disposable {
  dispose(): void;
}

/** Patch for {@link HistoryStore.update}; `updatedAt` defaults to now. */
export type HistoryPatch = Partial<Omit<HistoryEntry, 'id' | 'createdAt' | 'ownerPid'>>;

// Failures are exported as the strings Kernel Tuner writes (the mapping src/tuner/cache/format.ts uses for its files).
const FAILURES = Object.keys(KT_ERROR_OF) as (keyof typeof KT_ERROR_OF)[];

/** One timed (or failed) configuration, as the engine records it in `report.configurations`. */
export const ReportConfigurationSchema = z.object({
  config: z.record(z.string(), z.union([finiteNumber, z.string(), z.boolean()])),
  timeMs: finiteNumber.optional(),
  /** Individual run times (ms) behind `timeMs`, if kept. */
  timesMs: z.array(finiteNumber).optional(),
  compileTimeMs: finiteNumber.optional(),
  verificationTimeMs: finiteNumber.optional(),
  benchmarkTimeMs: finiteNumber.optional(),
  /** Why it has no time, in the tuner's vocabulary (FailureKind). */
  failure: z.enum(FAILURES).optional(),
  /**
   * What else was measured, under the names Kernel Tuner's cache entries carry at top level: the driver's num_regs and
   * occupancy, NVML's nvml_energy, nvml_power, core_freq, mem_freq, temperature, the metrics.
   */
  observed: z.record(z.string(), z.union([finiteNumber, z.string()])).optional(),
  timestamp: isoDate.optional(),
}).refine((c) => (c.timeMs === undefined) !== (c.failure === undefined), 'exactly one of timeMs and failure');

export const CacheExportReportSchema = z.looseObject({
  /** Kernel Tuner's problem_size: the sizes per dimension, numbers or expressions over the kernel's scalar arguments. */
  problemSize: z.union([z.array(z.union([z.number().int(), z.string().min(1)])).min(1), z.number().int(), z.string().min(1)]),
  /** Configurations of ONE search space (the final step's): they must all name the same parameters. */
  configurations: z.array(ReportConfigurationSchema).min(1),
});

export type ExportFormat = 'json' | 'kernel-tuner-cache';

const INDEX_FILE = '.index.json';
const INDEX_VERSION = 2;
/** Temp files older than this belong to a crashed writer, not to one in flight. */
const STALE_TEMP_MS = 10 * 60 * 1000;

/** `ino` changes on every atomic write (rename brings a new inode), so even a same-size rewrite in one mtime tick shows. */
interface IndexRecord {
  size: number;
  mtimeMs: number;
  ino: number;
  summary: HistorySummary;
}

const IndexSchema = z.object({
  version: z.literal(INDEX_VERSION),
  files: z.record(z.string(), z.object({ size: z.number(), mtimeMs: z.number(), ino: z.number(), summary: HistorySummarySchema })),
});

/** The session has its settings and model exchanges stored: it can be replayed. */
export function isReplayable(entry: Pick<HistoryEntry, 'run' | 'llmExchanges'>): boolean {
  return entry.run !== undefined && (entry.llmExchanges?.length ?? 0) > 0;
}

function summarize(entry: HistoryEntry): HistorySummary {
  const { editedCode: _code, ...parent } = entry.parent ?? {};
  return HistorySummarySchema.parse({ ...entry, stepCount: entry.steps.length, replayable: isReplayable(entry), ...(entry.parent && { parent }) });
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class HistoryCorruptError extends Error {
  constructor(readonly file: string, detail: string) {
    super(`history file ${file} is not a valid session: ${detail}`);
    this.name = 'HistoryCorruptError';
  }
}

export class HistoryStore {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly listeners = new Set<(change: HistoryChange) => void>();
  private index: Map<string, IndexRecord> | undefined;
  private indexWrite: Promise<void> = Promise.resolve();

  constructor(readonly root: string) {}

  /** Registers a listener called after every successful save/update/delete in this store instance. */
  onDidChange(listener: (change: HistoryChange) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => void this.listeners.delete(listener) };
  }

  /** Summaries of all valid sessions, newest first, plus the files that had to be skipped. */
  async list(): Promise<HistoryListResult> {
    const index = await this.loadIndex();
    let names: string[];
    try {
      names = await fs.readdir(this.root);
    } catch (err) {
      if (isMissing(err)) return { sessions: [], problems: [] };
      throw err;
    }
    const problems: HistoryProblem[] = [];
    const seen = new Set<string>();
    let indexChanged = false;
    for (const name of names) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      seen.add(name);
      const path = join(this.root, name);
      const stat = await fs.stat(path).catch(() => undefined);
      if (!stat?.isFile()) continue;
      const cached = index.get(name);
      if (cached && cached.size === stat.size && cached.mtimeMs === stat.mtimeMs && cached.ino === stat.ino) continue;
      try {
        const entry = await this.readFile(path);
        if (`${entry.id}.json` !== name) throw new HistoryCorruptError(path, `its id "${entry.id}" does not match the file name`);
        index.set(name, { size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, summary: summarize(entry) });
      } catch (err) {
        if (isMissing(err)) continue;
        index.delete(name);
        problems.push({ file: path, message: errorMessage(err) });
      }
      indexChanged = true;
    }
    for (const name of [...index.keys()]) {
      if (!seen.has(name)) {
        index.delete(name);
        indexChanged = true;
      }
    }
    if (indexChanged) await this.persistIndex();
    const sessions = [...index.values()].map((r) => r.summary);
    sessions.sort((a, b) => (a.createdAt === b.createdAt ? b.id.localeCompare(a.id) : Date.parse(b.createdAt) - Date.parse(a.createdAt)));
    return { sessions, problems };
  }

  /** The full session, or undefined if there is none. Throws {@link HistoryCorruptError} for an invalid file. */
  async get(id: string): Promise<HistoryEntry | undefined> {
    this.checkId(id);
    try {
      return await this.readFile(this.pathOf(id));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  /** Validates and writes the whole session, replacing any previous version. Returns what was written. */
  async save(entry: HistoryEntry): Promise<HistoryEntry> {
    const parsed = this.validate(entry);
    return this.serialize(parsed.id, async () => {
      const written = await this.write(parsed);
      this.emit({ type: 'saved', id: written.id });
      return written;
    });
  }

  /** Reads, patches (shallow), validates and rewrites a session; `updatedAt` is set to now unless patched. */
  async update(id: string, patch: HistoryPatch): Promise<HistoryEntry> {
    this.checkId(id);
    return this.serialize(id, async () => {
      const current = await this.readFile(this.pathOf(id)).catch((err: unknown) => {
        throw isMissing(err) ? new Error(`history: no session ${id}`) : err;
      });
      const next = this.validate({ ...current, ...patch, id, createdAt: current.createdAt, updatedAt: patch.updatedAt ?? new Date().toISOString() });
      const written = await this.write(next);
      this.emit({ type: 'saved', id });
      return written;
    });
  }

  /** Removes a session. Returns false if there was none. */
  async delete(id: string): Promise<boolean> {
    this.checkId(id);
    return this.serialize(id, async () => {
      try {
        await fs.unlink(this.pathOf(id));
      } catch (err) {
        if (isMissing(err)) return false;
        throw err;
      }
      const index = await this.loadIndex();
      index.delete(`${id}.json`);
      await this.persistIndex();
      this.emit({ type: 'deleted', id });
      return true;
    });
  }

  /**
   * Call once at activation: sessions still 'running' whose writer is gone (crash, reload, kill) become
   * 'interrupted' (resumable from their thread). Sessions written by another live process (a second window) are
   * left alone. Also removes temp files abandoned by a crashed write. Returns the ids marked.
   */
  async markInterruptedOnStartup(): Promise<string[]> {
    await removeStaleTempFiles(this.root, STALE_TEMP_MS);
    const { sessions } = await this.list();
    const marked: string[] = [];
    for (const summary of sessions) {
      if (summary.status !== 'running') continue;
      const entry = await this.get(summary.id).catch(() => undefined);
      if (!entry || entry.status !== 'running') continue;
      const owner = entry.ownerPid;
      if (owner !== undefined && owner !== process.pid && pidAlive(owner)) continue;
      await this.update(entry.id, { status: 'interrupted', error: entry.error ?? 'interrupted: the session was still running when its process ended' });
      marked.push(entry.id);
    }
    return marked;
  }

  /**
   * Writes a session to `dest` (atomically): 'json' is the full entry; 'kernel-tuner-cache' is a Kernel Tuner cache
   * file (schema 1.1.0) built from `report.problemSize` and `report.configurations`, loadable with
   * `tune_kernel(..., cache=dest)` or `simulation_mode=True`. `report`: the report as its events read now (a session
   * stored before a field was recorded exports it too), instead of the stored one.
   */
  async export(id: string, format: ExportFormat, dest: string, report?: unknown): Promise<void> {
    const entry = await this.get(id);
    if (!entry) throw new Error(`history: no session ${id}`);
    const { ownerPid: _p, ...publicEntry } = entry;
    const content = format === 'json' ? publicEntry : toKernelTunerCache(entry, report ?? entry.report);
    await writeFileAtomic(dest, `${JSON.stringify(content, null, 2)}\n`);
  }

  private pathOf(id: string): string {
    return join(this.root, `${id}.json`);
  }

  private checkId(id: string): void {
    if (!SESSION_ID_PATTERN.test(id)) throw new RangeError(`history: invalid session id ${JSON.stringify(id)}`);
  }

  private validate(value: unknown): HistoryEntry {
    const result = HistoryEntrySchema.safeParse(value);
    if (!result.success) throw new Error(`history: invalid session: ${z.prettifyError(result.error)}`);
    return result.data;
  }

  private async readFile(path: string): Promise<HistoryEntry> {
    const text = await fs.readFile(path, 'utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new HistoryCorruptError(path, `not JSON (${errorMessage(err)})`);
    }
    const result = HistoryEntrySchema.safeParse(json);
    if (!result.success) throw new HistoryCorruptError(path, z.prettifyError(result.error));
    return result.data;
  }

  private async write(entry: HistoryEntry): Promise<HistoryEntry> {
    const stamped: HistoryEntry = { ...entry, ownerPid: process.pid };
    const path = this.pathOf(stamped.id);
    const stat = await writeFileAtomic(path, `${JSON.stringify(stamped, null, 2)}\n`);
    const index = await this.loadIndex();
    index.set(`${stamped.id}.json`, { size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, summary: summarize(stamped) });
    await this.persistIndex();
    return stamped;
  }

  private serialize<T>(id: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(id) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    this.queues.set(id, tail);
    void tail.then(() => {
      if (this.queues.get(id) === tail) this.queues.delete(id);
    });
    return run;
  }

  private async loadIndex(): Promise<Map<string, IndexRecord>> {
    if (this.index) return this.index;
    const index = new Map<string, IndexRecord>();
    try {
      const parsed = IndexSchema.safeParse(JSON.parse(await fs.readFile(join(this.root, INDEX_FILE), 'utf8')));
      // A bad index is just a cold cache: list() re-reads every session file.
      if (parsed.success) for (const [name, record] of Object.entries(parsed.data.files)) index.set(name, record);
    } catch (err) {
      if (!isMissing(err) && !(err instanceof SyntaxError)) throw err;
    }
    this.index ??= index;
    return this.index;
  }

  /**
   * Writes the in-memory index. Writes are chained so the last one on disk is the newest state, and never fail the
   * caller: the index is a cache that list() revalidates, the session file is what counts.
   */
  private persistIndex(): Promise<void> {
    const index = this.index;
    if (!index) return Promise.resolve();
    this.indexWrite = this.indexWrite.then(() =>
      writeFileAtomic(join(this.root, INDEX_FILE), JSON.stringify({ version: INDEX_VERSION, files: Object.fromEntries(index) })).then(
        () => undefined,
        () => undefined,
      ),
    );
    return this.indexWrite;
  }

  private emit(change: HistoryChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch {
        // A failing listener (a disposed tree view) must not fail the write that already succeeded.
      }
    }
  }
}

/** The session's final search as a Kernel Tuner cache; what it lacks for one is said in words (thrown). */
export function toKernelTunerCache(entry: HistoryEntry, report: unknown): Record<string, unknown> {
  const cannot = (why: string) => new Error(`The session of ${entry.kernelName} (${entry.id}) cannot be exported as a Kernel Tuner cache: ${why}.`);
  const fields = (typeof report === 'object' && report !== null ? report : {}) as { problemSize?: unknown; configurations?: unknown };
  if (!Array.isArray(fields.configurations) || fields.configurations.length === 0) {
    throw cannot('no step of it was accepted, so it has no search to export (a cache holds the configurations of one search); "Export as JSON report" keeps all it has');
  }
  if (fields.problemSize === undefined) throw cannot('its report does not say the problem size its tests ran at, which a cache names');
  const parsed = CacheExportReportSchema.safeParse(report);
  if (!parsed.success) throw cannot(`its report is damaged (${z.prettifyError(parsed.error).replace(/\s+/g, ' ')})`);
  const { problemSize, configurations } = parsed.data;
  const keys = Object.keys(configurations[0]!.config);
  const values = new Map<string, ParamValue[]>(keys.map((k) => [k, []]));
  const cache: Record<string, Record<string, unknown>> = {};
  for (const c of configurations) {
    const names = Object.keys(c.config);
    if (names.length !== keys.length || !keys.every((k) => k in c.config)) {
      throw new Error(
        `history: session ${entry.id} mixes search spaces in report.configurations ([${keys.join(', ')}] vs [${names.join(', ')}]); a Kernel Tuner cache holds one`,
      );
    }
    for (const k of keys) {
      const seen = values.get(k)!;
      if (!seen.includes(c.config[k]!)) seen.push(c.config[k]!);
    }
    cache[configKey(c.config, keys)] = {
      ...c.config,
      time: c.failure ? KT_ERROR_OF[c.failure] : c.timeMs,
      ...(c.failure ? {} : { times: c.timesMs ?? [c.timeMs] }),
      compile_time: c.compileTimeMs ?? 0,
      verification_time: c.verificationTimeMs ?? 0,
      benchmark_time: c.benchmarkTimeMs ?? 0,
      strategy_time: 0,
      framework_time: 0,
      ...c.observed,
      timestamp: c.timestamp ?? entry.updatedAt,
    };
  }
  // Numbers ascending, as a user would declare them; other values in the order they were tried.
  const sortValues = (vs: ParamValue[]): ParamValue[] => (vs.every((v) => typeof v === 'number') ? [...vs].sort((a, b) => (a as number) - (b as number)) : vs);
  return {
    schema_version: '1.1.0',
    device_name: entry.device.name,
    kernel_name: entry.kernelName,
    problem_size: problemSize,
    tune_params_keys: keys,
    tune_params: Object.fromEntries(keys.map((k) => [k, sortValues(values.get(k)!)])),
    objective: 'time',
    cache,
  };
}
