// Where `auto` keeps its sessions, so that they can be resumed, branched and replayed later: a history of plain JSON
// entries (src/engine/store/history-store.ts) and the LangGraph checkpoints beside it, laid out as the extension keeps
// its own (history/, checkpoints/), so `--sessions` may point at the extension's storage too.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { FileCheckpointSaver } from '../engine/store/checkpointer';
import type { TuningEvent } from '../engine/progress/events';
import { HistoryEntrySchema, HistoryStore, SESSION_ID_PATTERN, type HistoryEntry, type HistoryParent } from '../engine/store/history-store';
import type { LlmExchange } from '../engine/llm/exchange';
import { historyFields, reduceAll } from '../engine/session/session-view';
import type { SessionEnd } from '../engine/session/session';
import { isStoredSessionReport, SESSION_REPORT_FORMAT, type StoredSessionHeader } from '../engine/session/session-log';
import type { SessionSettings } from '../engine/session/session-settings';

/** `--sessions`, else $LKT_SESSIONS_DIR, else $XDG_STATE_HOME/llm-kernel-tuner (~/.local/state/llm-kernel-tuner). */
export function sessionsDir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  if (env.LKT_SESSIONS_DIR) return resolve(env.LKT_SESSIONS_DIR);
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'llm-kernel-tuner');
}

export interface SessionStore {
  dir: string;
  history: HistoryStore;
  checkpointer: FileCheckpointSaver;
}

export function openSessionStore(dir: string): SessionStore {
  return { dir, history: new HistoryStore(join(dir, 'history')), checkpointer: new FileCheckpointSaver(join(dir, 'checkpoints')) };
}

/**
 * A stored session by id, or a session file (an entry as `Export as JSON report` writes it) by path. The message of a
 * miss says where it looked.
 */
export async function findSession(store: SessionStore, ref: string): Promise<HistoryEntry> {
  const looksLikePath = ref.endsWith('.json') || ref.includes('/') || ref.includes('\\');
  if (looksLikePath || !SESSION_ID_PATTERN.test(ref)) {
    const path = resolve(ref);
    if (!existsSync(path)) throw new Error(`no session file ${path}`);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new Error(`${path} is not a session file: ${(error as Error).message}`);
    }
    const parsed = HistoryEntrySchema.safeParse(json);
    if (!parsed.success) throw new Error(`${path} is not a session file: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  }
  const entry = await store.history.get(ref);
  if (!entry) throw new Error(`no session ${ref} in ${store.dir} (choose the directory with --sessions)`);
  return entry;
}

/** The events a stored session's report holds (none for an entry stored without one). */
export function storedEvents(entry: HistoryEntry): TuningEvent[] {
  return isStoredSessionReport(entry.report) ? entry.report.events : [];
}

const STATUS: Record<SessionEnd['status'], HistoryEntry['status']> = {
  finished: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  awaiting_approval: 'interrupted',
};

export interface RecordingStart {
  id: string;
  threadId: string;
  /** The source file as the session started from it. */
  originalCode: string;
  filePath: string;
  run: SessionSettings;
  parent?: HistoryParent;
  header: Omit<StoredSessionHeader, 'kernelName'>;
  /** What the session already has: a resumed session's log, or what a branch inherits of its parent's. */
  events: TuningEvent[];
  exchanges: LlmExchange[];
  /** A resumed session keeps its creation date. */
  createdAt?: string;
}

/**
 * Keeps a history entry in step with a running session: its events (the report), its model exchanges, its summary.
 * Written when the session starts, at the end of each step and when it ends, so a crash leaves a resumable session.
 */
export class SessionRecorder {
  private readonly events: TuningEvent[];
  private readonly exchanges: LlmExchange[];
  private started: Extract<TuningEvent, { type: 'session.started' }> | undefined;
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly history: HistoryStore,
    private readonly start: RecordingStart,
  ) {
    this.events = [...start.events];
    this.exchanges = [...start.exchanges];
  }

  get id(): string {
    return this.start.id;
  }

  record(event: TuningEvent): Promise<unknown> {
    if (event.type === 'llm.exchange') {
      this.exchanges.push(event.exchange);
      return this.writing;
    }
    this.events.push(event);
    if (event.type === 'session.started' && !this.started) {
      this.started = event;
      return this.save('running');
    }
    return ['step.accepted', 'step.rejected', 'step.skipped', 'plan', 'baseline'].includes(event.type) ? this.save('running') : this.writing;
  }

  /** The final write, with how the session ended. */
  finish(end: SessionEnd): Promise<unknown> {
    return this.save(STATUS[end.status], end.status === 'failed' ? end.error.message : undefined);
  }

  private save(status: HistoryEntry['status'], error?: string): Promise<unknown> {
    const started = this.started;
    if (!started) return this.writing;
    const s = this.start;
    const events = [...this.events];
    const exchanges = [...this.exchanges];
    this.writing = this.writing.then(() => {
      const now = new Date().toISOString();
      const header = { ...s.header, kernelName: started.kernel.name };
      return this.history.save({
        // Steps, times, speed-up and final code as the extension's history derives them from the same events; the
        // status and the error are the process's own word on how the session ended.
        ...historyFields(reduceAll(header, events)),
        id: s.id,
        kernelName: started.kernel.name,
        filePath: s.filePath,
        createdAt: s.createdAt ?? now,
        updatedAt: now,
        device: { ...started.device },
        status,
        originalCode: s.originalCode,
        report: { format: SESSION_REPORT_FORMAT, header, events },
        threadId: s.threadId,
        ...(error !== undefined && { error }),
        ...(s.parent && { parent: s.parent }),
        run: { ...s.run, kernelName: started.kernel.name },
        llmExchanges: exchanges,
      });
    });
    return this.writing;
  }
}
