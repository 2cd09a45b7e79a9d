/**
 * Live tuning sessions of this window: runs them through the engine runtime, keeps each one's event log, feeds the
 * panel, the log and the status bar (its progress), and writes the session to the history as it goes (so
 * a crash or reload leaves a session that can be resumed). At the end it offers the final kernel as an inline diff.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeEvent, makeEvent, type TuningEvent } from '../engine/progress/events';
import { newSessionId, type HistoryEntry, type HistoryStore } from '../engine/store/history-store';
import { lockSession, type SessionLock } from '../engine/store/session-lock';
import type { LlmExchange } from '../engine/llm/exchange';
import { approvalsOf, branchOptionsOf, eventsBeforeStep, inheritedEvents } from '../engine/session/session-log';
import { replaySettings, type SessionSettings } from '../engine/session/session-settings';
import { modelSettings, sessionSettings, type EngineConfig } from './config';
import type { BackendLease, EngineRuntime, SessionRun } from './engine-api';
import type { InlineDiffController } from './inline-diff';
import { buildFlagsFor } from '../tuner/compile/compile-commands';
import { parseKernels } from '../tuner/source/kernel-parser';
import { findKernel, ParseError } from '../tuner/source/kernel-signature';
import { proposalForDocument, spliceFinalCode } from './inline-diff-model';
import type { EditedPlanStep, RelatedSeries } from './protocol';
import { buildReport, isSessionReport } from './report';
import { progressMessage } from './progress';
import { acceptedTimeline, historyFields, reduce, reduceAll, type SessionHeader, type SessionView } from '../engine/session/session-view';

interface LiveSession {
  header: SessionHeader;
  events: TuningEvent[];
  /** The model exchanges (kept out of the event log: the panel has no use for them). */
  exchanges: LlmExchange[];
  /** A replay of recorded answers: it offers no diff at its end. */
  replay: boolean;
  view: SessionView;
  abort: AbortController;
  run?: SessionRun;
  documentUri: vscode.Uri;
  originalCode: string;
  /** Events not yet posted to the panel. */
  unsent: TuningEvent[];
  dirty: boolean;
  saving: Promise<void> | undefined;
  finished: Promise<void>;
}

export interface SessionSnapshot {
  header: SessionHeader;
  events: TuningEvent[];
  live: boolean;
}

export interface StartRequest {
  document: vscode.TextDocument;
  kernelName: string;
  config: EngineConfig;
  runtime: EngineRuntime;
  backend: BackendLease;
  checkpointDir: string;
  /** Continue this interrupted history session instead of starting a new one. */
  resume?: HistoryEntry;
  /**
   * With `resume`, a finished evolutionary session: it evolves its population further, with these settings in place of
   * its recorded ones (a larger budget, more children).
   */
  evolveFurther?: Pick<SessionSettings, 'budget' | 'strategy'>;
  /** Start a new session as a branch of this stored one, from one of its steps, as it was or with an edited kernel. */
  branch?: { parent: HistoryEntry; stepId: string; stepTitle?: string; editedCode?: string };
  /** Run this stored session's graph again with its recorded answers (a new session, no model). */
  replay?: HistoryEntry;
}

export interface TuningStartRequest {
  document: vscode.TextDocument;
  kernelName: string;
  /** The tuning spec of the kernel (absolute path). */
  specPath: string;
  /** Run the best configuration under compute-sanitizer before proposing it (kernelTuner.sanitize). */
  sanitize: boolean;
  runtime: EngineRuntime;
  /** The GPUs leased; or, with no GPU, a Kernel Tuner cache of a recorded run of the same spec to replay. */
  on: BackendLease | { replay: string };
}

const FLUSH_MS = 100;
const SAVE_MS = 500;

/**
 * Where a file's #includes are found: its own directory (a file: document), the kernelTuner.includePaths setting
 * (relative to the workspace folder), and the project's compile_commands.json, which also gives its defines.
 */
function fileContext(uri: vscode.Uri, includePaths: readonly string[]): { filePath?: string; includePaths: string[]; buildOptions: string[] } {
  const folder = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath;
  const configured = includePaths.map((p) => (folder ? path.resolve(folder, p) : path.resolve(p)));
  if (uri.scheme !== 'file') return { includePaths: configured, buildOptions: [] };
  const build = buildFlagsFor(uri.fsPath, folder);
  return { filePath: uri.fsPath, includePaths: [...configured, ...(build?.includePaths ?? [])], buildOptions: build?.options ?? [] };
}

export class SessionManager implements vscode.Disposable {
  private readonly live = new Map<string, LiveSession>();
  private readonly appended = new vscode.EventEmitter<{ sessionId: string; from: number; events: TuningEvent[] }>();
  /** Events of a session, batched (at most every 100 ms). */
  readonly onDidAppend = this.appended.event;
  private readonly liveChanged = new vscode.EventEmitter<{ sessionId: string; live: boolean; header: SessionHeader }>();
  readonly onDidChangeLive = this.liveChanged.event;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly statusBar: vscode.StatusBarItem;
  /** The session and progress the status bar shows ('' none): most events change neither, and redraw nothing. */
  private statusShown = '';

  constructor(
    private readonly store: HistoryStore,
    private readonly log: vscode.LogOutputChannel,
    private readonly inlineDiff: InlineDiffController,
    private readonly workspaceRelative: (uri: vscode.Uri) => string,
  ) {
    this.statusBar = vscode.window.createStatusBarItem('kernelTuner.status', vscode.StatusBarAlignment.Left, 50);
    this.statusBar.name = 'Kernel Tuner';
  }

  isLive(sessionId: string): boolean {
    return this.live.has(sessionId);
  }

  /** The newest live session, for Cancel from the palette. */
  current(): string | undefined {
    return [...this.live.keys()].at(-1);
  }

  /** The session's header and log: from memory while it runs here, else from the history. */
  async snapshot(sessionId: string): Promise<SessionSnapshot | undefined> {
    const live = this.live.get(sessionId);
    // Events not yet flushed are left out: they reach the panel with the next `events` message.
    if (live) return { header: live.header, events: live.events.slice(0, live.events.length - live.unsent.length), live: true };
    const entry = await this.store.get(sessionId);
    if (!entry) return undefined;
    const header: SessionHeader = isSessionReport(entry.report)
      ? { ...entry.report.header }
      : { sessionId, kernelName: entry.kernelName, fileName: entry.filePath, startedAt: entry.createdAt, model: '', strategy: 'autonomous' };
    if (entry.status === 'interrupted') header.statusOverride = 'interrupted';
    else delete header.statusOverride;
    return { header, events: isSessionReport(entry.report) ? entry.report.events : [], live: false };
  }

  /** The step series of the sessions related to `sessionId` (the one it branched from, its branches), for its chart. */
  async related(sessionId: string): Promise<RelatedSeries[]> {
    // The summaries say who branched from whom: the session's own file (a running one's grows all along) is not read.
    const { sessions } = await this.store.list();
    const relatives: { id: string; label: string }[] = [];
    const parent = sessions.find((s) => s.id === sessionId)?.parent;
    if (parent) relatives.push({ id: parent.id, label: 'the session it branched from' });
    for (const s of sessions) if (s.parent?.id === sessionId) relatives.push({ id: s.id, label: `branch from step ${s.parent.stepId}` });
    const series: RelatedSeries[] = [];
    for (const { id, label } of relatives) {
      const snapshot = await this.snapshot(id).catch(() => undefined);
      const timeline = snapshot ? acceptedTimeline(reduceAll(snapshot.header, snapshot.events)) : [];
      if (timeline.length > 0) series.push({ sessionId: id, label, timeline });
    }
    return series;
  }

  /**
   * Starts a session: a new one, the continuation of an interrupted one (`resume`), a branch of a stored one at one of
   * its steps (`branch`), or a replay of a stored one's recorded answers (`replay`). Resolves with its id once it is
   * registered, not when it ends.
   */
  async start(request: StartRequest): Promise<{ sessionId: string; finished: Promise<void> }> {
    // A resumed session continues in its own thread: one process at a time (a terminal's `auto --resume` too).
    const lock = request.resume ? lockSession(path.dirname(request.checkpointDir), request.resume.id, `VS Code (extension host, process ${process.pid})`) : undefined;
    try {
      return await this.startHolding(request, lock);
    } catch (error) {
      lock?.release();
      throw error;
    }
  }

  private async startHolding(request: StartRequest, lock: SessionLock | undefined): Promise<{ sessionId: string; finished: Promise<void> }> {
    const { document, kernelName, config, runtime, backend, resume, branch, replay, evolveFurther } = request;
    // A branch or a replay is a new session built on a stored one; a resume continues the stored one itself.
    const source = resume ?? branch?.parent ?? replay;
    const sessionId = resume?.id ?? newSessionId();
    const stored = source && isSessionReport(source.report) ? source.report : undefined;
    const now = new Date().toISOString();
    const modelName = replay ? `replay of ${replay.id}${stored ? ` (${stored.header.model})` : ''}` : `${config.llm.provider}: ${config.llm.model}`;
    const header: SessionHeader = stored
      ? { ...stored.header, ...(!resume && { sessionId, startedAt: now, model: modelName }) }
      : { sessionId, kernelName, fileName: this.workspaceRelative(document.uri), startedAt: now, model: modelName, strategy: config.strategy.kind };
    delete header.statusOverride;
    // What the session goes on from: a resumed session's log, what a branch inherits of its parent's (a replayed
    // branch starts where the branch did, so it inherits the same).
    const events = !stored ? [] : resume ? [...stored.events] : branch ? eventsBeforeStep(stored.events, branch.stepId) : inheritedEvents(stored.events);
    const originalCode = source?.originalCode ?? document.getText();
    // A resumed session and a branch ask the model configured now; a replay asks none. A session stored by an older
    // version has no settings: it goes on with today's (as it always did).
    const settings = replay
      ? replay.run && replaySettings(replay.run, stored?.events ?? [])
      : source?.run
        ? { ...source.run, ...evolveFurther, model: modelSettings(config) }
        : sessionSettings(config, { kernelName: source?.kernelName ?? kernelName, fileName: header.fileName, ...fileContext(document.uri, config.includePaths) });
    if (!settings) throw new Error(`session ${replay!.id} was stored without its settings (by an older version): it cannot be replayed`);
    const session = this.liveSession(header, events, document.uri, originalCode, replay !== undefined);
    session.exchanges.push(...(resume?.llmExchanges ?? []));
    const parent = branch && {
      id: branch.parent.id,
      threadId: branch.parent.threadId,
      stepId: branch.stepId,
      ...(branch.stepTitle !== undefined && { stepTitle: branch.stepTitle }),
      ...(branch.editedCode !== undefined && { editedCode: branch.editedCode }),
    };
    const entry: HistoryEntry = {
      ...(resume ?? {
        id: sessionId,
        kernelName: source?.kernelName ?? kernelName,
        filePath: source?.filePath ?? header.fileName,
        fileUri: source?.fileUri ?? document.uri.toString(),
        createdAt: now,
        originalCode,
        threadId: sessionId,
        steps: [],
        ...(parent && { parent }),
        ...(replay && { replayOf: replay.id }),
      }),
      updatedAt: now,
      status: 'running',
      device: { ...backend.device },
      report: buildReport(header, events, session.view),
      run: settings,
      llmExchanges: session.exchanges,
    };
    delete entry.error;
    // A stored branch always carries where it branches off: if it was interrupted before its first checkpoint, resuming
    // it starts the branch; afterwards the engine ignores it. A replay of a branch branches off the same way.
    const branchOptions = entry.parent ? branchOptionsOf(entry) : replay ? branchOptionsOf(replay) : undefined;
    return this.launch(sessionId, session, entry, backend, () =>
      runtime.startSession(
        {
          threadId: entry.threadId,
          code: originalCode,
          settings,
          config,
          ...(branchOptions && { branch: branchOptions }),
          ...(evolveFurther && { evolveFurther: true }),
          ...(replay && { replay: { exchanges: replay.llmExchanges ?? [], approvals: approvalsOf(stored?.events ?? []) } }),
          checkpointDir: request.checkpointDir,
          signal: session.abort.signal,
        },
        backend,
      ),
      lock,
    );
  }

  /**
   * Starts a session of the tuner alone over a spec ("Tune parameters"): one step, no model, shown and stored as the
   * others are; at its end the best values are offered in the file as an LLM session's final kernel is.
   */
  async startTuning(request: TuningStartRequest): Promise<{ sessionId: string; finished: Promise<void> }> {
    const { document, kernelName, specPath, sanitize, runtime, on } = request;
    const sessionId = newSessionId();
    const now = new Date().toISOString();
    const header: SessionHeader = { sessionId, kernelName, fileName: this.workspaceRelative(document.uri), startedAt: now, model: `the tuner alone over ${this.workspaceRelative(vscode.Uri.file(specPath))}, no model`, strategy: 'tuner' };
    const originalCode = document.getText();
    const session = this.liveSession(header, [], document.uri, originalCode, false);
    const entry: HistoryEntry = {
      id: sessionId,
      kernelName,
      filePath: header.fileName,
      fileUri: document.uri.toString(),
      createdAt: now,
      updatedAt: now,
      status: 'running',
      // A replay's device is the cache's, named by its first event.
      device: 'replay' in on ? { name: `replayed from ${this.workspaceRelative(vscode.Uri.file(on.replay))}` } : { ...on.device },
      steps: [],
      originalCode,
      threadId: sessionId,
      report: buildReport(header, [], session.view),
    };
    return this.launch(sessionId, session, entry, 'replay' in on ? undefined : on, () =>
      runtime.startTuning({ threadId: sessionId, code: originalCode, filePath: document.uri.fsPath, specPath, sanitize, signal: session.abort.signal }, on),
    );
  }

  private liveSession(header: SessionHeader, events: TuningEvent[], documentUri: vscode.Uri, originalCode: string, replay: boolean): LiveSession {
    return {
      header,
      events,
      exchanges: [],
      view: reduceAll(header, events),
      abort: new AbortController(),
      documentUri,
      originalCode,
      unsent: [],
      dirty: false,
      saving: undefined,
      finished: Promise.resolve(),
      replay,
    };
  }

  /** Stores the new entry, registers the session, and runs it to its end (the backend and the lock are given back then). */
  private async launch(
    sessionId: string,
    session: LiveSession,
    entry: HistoryEntry,
    backend: BackendLease | undefined,
    start: () => SessionRun,
    lock?: SessionLock,
  ): Promise<{ sessionId: string; finished: Promise<void> }> {
    this.live.set(sessionId, session);
    await this.store.save(entry);
    this.liveChanged.fire({ sessionId, live: true, header: session.header });
    this.updateStatusBar();
    session.run = start();
    session.finished = this.consume(sessionId, session, session.run).finally(() => {
      lock?.release();
      return backend?.dispose().catch(() => undefined);
    });
    return { sessionId, finished: session.finished };
  }

  cancel(sessionId: string): boolean {
    const session = this.live.get(sessionId);
    if (!session) return false;
    this.log.info(`cancelling session ${sessionId}`);
    session.abort.abort();
    return true;
  }

  approvePlan(sessionId: string, steps: EditedPlanStep[]): boolean {
    const session = this.live.get(sessionId);
    if (!session?.run || !session.view.planAwaitingApproval) return false;
    this.log.info(`session ${sessionId}: plan approved with ${steps.length} step(s)`);
    session.run.approvePlan(steps);
    return true;
  }

  /** Shows a kernel of the session (the final one, or an accepted step's) as an inline diff on its document. */
  async showDiff(sessionId: string, kernelName: string, code: string, originalCode: string, fileUri: vscode.Uri, title: string): Promise<boolean> {
    const document = await vscode.workspace.openTextDocument(fileUri);
    const kernels = await parseKernels(originalCode).catch((error: unknown) => {
      if (error instanceof ParseError) return error.kernels;
      throw error;
    });
    const kernel = findKernel(kernels, kernelName);
    const tunedFile = kernel ? spliceFinalCode(originalCode, code, kernel.range.startIndex, kernel.range.endIndex) : code;
    const eol = document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
    // Against the document as it is without a proposal still open in it (the new one replaces that).
    const { proposed, conflicts } = proposalForDocument(originalCode, tunedFile, this.inlineDiff.textWithoutProposal(document), eol);
    if (conflicts > 0) {
      void vscode.window.showWarningMessage(`${conflicts} change(s) of the tuned kernel touch lines you edited since; they are left out of the proposal.`);
    }
    const shown = await this.inlineDiff.review(document, proposed, title, (outcome) => {
      this.log.info(`${this.workspaceRelative(fileUri)}: ${outcome.accepted} change(s) accepted, ${outcome.rejected} rejected, ${outcome.dropped} withdrawn (session ${sessionId})`);
    });
    if (!shown) void vscode.window.showInformationMessage(`${this.workspaceRelative(fileUri)} already holds this kernel.`);
    return shown;
  }

  dispose(): void {
    for (const session of this.live.values()) session.abort.abort();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.statusBar.dispose();
    this.appended.dispose();
    this.liveChanged.dispose();
  }

  private async consume(sessionId: string, session: LiveSession, run: SessionRun): Promise<void> {
    try {
      for await (const event of run.events) this.append(sessionId, session, event);
    } catch (error) {
      // The runtime promises never to throw; if it does anyway, the session still ends as failed, with the reason.
      const message = error instanceof Error ? error.message : String(error);
      this.append(sessionId, session, makeEvent({ type: 'session.failed', error: { name: 'InternalError', message } }));
    }
    if (!['completed', 'failed', 'cancelled'].includes(session.view.status)) {
      this.append(sessionId, session, makeEvent({ type: 'session.failed', error: { name: 'InternalError', message: 'the engine stopped without finishing the session' } }));
    }
    this.flush();
    this.live.delete(sessionId);
    session.dirty = true;
    await this.save(sessionId, session);
    this.liveChanged.fire({ sessionId, live: false, header: session.header });
    this.updateStatusBar();
    await this.announce(sessionId, session);
  }

  private append(sessionId: string, session: LiveSession, event: TuningEvent): void {
    if (event.type === 'llm.exchange') {
      session.exchanges.push(event.exchange);
      session.dirty = true;
      return;
    }
    session.events.push(event);
    session.view = reduce(session.view, event);
    session.unsent.push(event);
    session.dirty = true;
    const { level, text } = describeEvent(event);
    this.log[level === 'warning' ? 'warn' : level](`[${sessionId}] ${text}`);
    this.updateStatusBar();
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
    if (!session.saving) {
      session.saving = new Promise<void>((resolve) => setTimeout(resolve, SAVE_MS)).then(() => this.save(sessionId, session)).finally(() => (session.saving = undefined));
    }
  }

  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    for (const [sessionId, session] of this.live) {
      if (session.unsent.length === 0) continue;
      const events = session.unsent;
      session.unsent = [];
      this.appended.fire({ sessionId, from: session.events.length - events.length, events });
    }
  }

  private async save(sessionId: string, session: LiveSession): Promise<void> {
    if (!session.dirty) return;
    session.dirty = false;
    try {
      await this.store.update(sessionId, { ...historyFields(session.view), report: buildReport(session.header, session.events, session.view), llmExchanges: [...session.exchanges] });
    } catch (error) {
      this.log.error(`history: could not save session ${sessionId}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private updateStatusBar(): void {
    const sessionId = this.current();
    const session = sessionId ? this.live.get(sessionId) : undefined;
    // Progress lives here, not in a notification: a toast would cover the panel's tables for the whole session.
    const progress = session ? progressMessage(session.view) : '';
    const shown = session ? `${sessionId} ${progress}` : '';
    if (shown === this.statusShown) return;
    if ((shown === '') !== (this.statusShown === '')) void vscode.commands.executeCommand('setContext', 'kernelTuner.running', session !== undefined);
    this.statusShown = shown;
    if (!session || !sessionId) {
      this.statusBar.hide();
      return;
    }
    this.statusBar.text = `$(sync~spin) ${session.header.kernelName}: ${progress}`;
    const args = encodeURIComponent(JSON.stringify([sessionId]));
    const tooltip = new vscode.MarkdownString(`Kernel Tuner: tuning ${session.header.kernelName}, ${progress}\n\n[Show the panel](command:kernelTuner.showPanel?${args}) · [Cancel](command:kernelTuner.cancel?${args})`);
    tooltip.isTrusted = { enabledCommands: ['kernelTuner.showPanel', 'kernelTuner.cancel'] };
    this.statusBar.tooltip = tooltip;
    this.statusBar.command = { command: 'kernelTuner.showPanel', title: 'Show tuning panel', arguments: [sessionId] };
    this.statusBar.show();
  }

  private async announce(sessionId: string, session: LiveSession): Promise<void> {
    const view = session.view;
    const name = session.header.kernelName;
    if (session.replay && view.status === 'completed' && view.final) {
      // A replay checks the graph; the kernel it ends with is the recorded session's, already offered back then.
      const unused = session.run?.unusedExchanges() ?? 0;
      const note = unused > 0 ? ` ${unused} recorded answer(s) were not asked for (see the log).` : ' Every recorded answer was used.';
      this.log.info(`[${sessionId}] replay finished; ${unused} recorded exchange(s) unused`);
      void vscode.window.showInformationMessage(`${name}: the replay finished (${view.final.tracker.speedup.toFixed(2)}×).${note}`, 'Show report').then((choice) => {
        if (choice) void vscode.commands.executeCommand('kernelTuner.showPanel', sessionId);
      });
    } else if (view.status === 'completed' && view.final && session.header.strategy === 'tuner' && view.final.tracker.steps.length === 0) {
      void vscode.window.showInformationMessage(`${name}: no configuration is faster than the file's own values; nothing to change.`, 'Show report').then((choice) => {
        if (choice) void vscode.commands.executeCommand('kernelTuner.showPanel', sessionId);
      });
    } else if (view.status === 'completed' && view.final) {
      const gain = view.final.tracker.speedup;
      await this.showDiff(sessionId, name, view.final.finalCode, session.originalCode, session.documentUri, `${name} tuned (${gain.toFixed(2)}×)`).catch((error: unknown) => {
        this.log.error(`could not show the tuned kernel: ${error instanceof Error ? error.message : String(error)}`);
      });
      const review = 'Review the changes in the editor (Accept / Reject).';
      // A model that failed late: the best kernel so far is proposed all the same, and the message says why it is not more.
      const shown = view.stoppedEarly
        ? vscode.window.showWarningMessage(`${name}: ${gain.toFixed(2)}× faster, but ${view.stoppedEarly}. ${review}`, 'Show report')
        : vscode.window.showInformationMessage(`${name}: ${gain.toFixed(2)}× faster. ${review}`, 'Show report');
      void shown.then((choice) => {
        if (choice) void vscode.commands.executeCommand('kernelTuner.showPanel', sessionId);
      });
    } else if (view.status === 'failed') {
      void vscode.window.showErrorMessage(`${session.replay ? 'The replay of' : 'Tuning'} ${name} failed: ${view.error ?? 'see the log'}`, 'Show log', 'Show report').then((choice) => {
        if (choice === 'Show log') this.log.show();
        if (choice === 'Show report') void vscode.commands.executeCommand('kernelTuner.showPanel', sessionId);
      });
    } else if (view.status === 'cancelled') {
      void vscode.window.showInformationMessage(`Tuning ${name} was cancelled.`);
    }
  }
}
