/**
 * Entry point of the VS Code extension. Activation is cheap: it registers commands, the CodeLens providers, the
 * history view, and reopens the reports that were open before a window reload. The engine (LangChain, LangGraph, the
 * GPU client) lives in a second bundle, dist/engine-runtime.js, loaded on the first "Tune this kernel" or "Tune
 * parameters" (the tuner alone, over a spec).
 *
 * Test hook (test-only): when the environment variable KERNEL_TUNER_TEST_BACKEND names a JavaScript module when the
 * extension activates, sessions run on the TuningBackend that module creates instead of the GPU. It is logged loudly
 * and never chosen otherwise; the extension tests set it for the extension host they start.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { HistoryStore, isReplayable, toKernelTunerCache, type HistoryEntry } from '../engine/store/history-store';
import { codeBeforeStep, startedStepsOf } from '../engine/session/session-log';
import { chartFileName, chartImageBytes } from './chart-export';
import { readEngineConfig, readGpuSettings, readSanitizeSetting, redactConfig, SECTION, setByWorkspace, type EngineConfig } from './config';
import { isEngineFailure, type BackendLease, type DeviceInfo, type EngineFailure, type EngineRuntime } from './engine-api';
import { chooseModel, openExample, replayExample, type ModelChoice } from './getting-started';
import { HistoryTreeProvider, sessionIdOf, type HistoryNode } from './history-tree';
import { htmlReportCommands } from './html-report';
import { InlineDiffController } from './inline-diff';
import { announceSaved } from './saved-file';
import { isCudaDocument, KernelIndex, type KernelTarget, type ParametersTarget } from './kernels';
import { PanelManager } from './panel';
import { describeFailures } from './preflight';
import type { ChartImageFormat, FromWebviewMessage } from './protocol';
import { buildReport, isSessionReport } from './report';
import { reduceAll, stepCode, type SessionView } from '../engine/session/session-view';
import { evolveFurtherQuestions, type EvolveSettings } from './evolve-further';
import { variantKernel } from './variant-kernel';
import { SessionManager, type StartRequest } from './sessions';
import { cachesBeside, specsBeside, specsForKernel } from '../tuner/spec/spec-files';
import type { GpuSelection } from '../tuner/run/gpu-selection';
import { WindowState } from './window-state';

export const TEST_BACKEND_ENV = 'KERNEL_TUNER_TEST_BACKEND';
const API_KEY_SECRET = 'kernelTuner.openai.apiKey';
/** The user's answers, by base URL, to "send the stored API key to this URL from the workspace's settings?". */
const KEY_CONSENT_STATE = 'kernelTuner.apiKeyConsent';
/** The Getting Started walkthrough (package.json, contributes.walkthroughs) and its step on the GPU and the toolkit. */
const WALKTHROUGH = 'kernelTuner.gettingStarted';
const WALKTHROUGH_GPU_STEP = 'gpu';

/** What a check threw, as a failure to tell (the engine throws EngineFailures; anything else is unexpected). */
function asFailure(reason: unknown): EngineFailure {
  return isEngineFailure(reason) ? reason : { kind: 'other', message: reason instanceof Error ? reason.message : String(reason) };
}

/** A way on where the GPU cannot be used: a button of the pre-flight's message. */
interface NoGpuOffer {
  label: string;
  run(): Promise<void>;
}

/** What activate() returns: used by the extension tests to observe the extension from outside. */
export interface KernelTunerApi {
  readonly sessions: SessionManager;
  readonly panels: PanelManager;
  readonly inlineDiff: InlineDiffController;
  readonly history: HistoryStore;
  readonly historyTree: HistoryTreeProvider;
  /** Resolves when the session started by the last tune command has ended. */
  lastSession(): { sessionId: string; finished: Promise<void> } | undefined;
}

export async function activate(context: vscode.ExtensionContext): Promise<KernelTunerApi> {
  const log = vscode.window.createOutputChannel('Kernel Tuner', { log: true });
  const storage = context.globalStorageUri.fsPath;
  const history = new HistoryStore(join(storage, 'history'));
  const checkpointDir = join(storage, 'checkpoints');
  const testBackendModule = process.env[TEST_BACKEND_ENV] || undefined;
  if (testBackendModule) log.warn(`TEST MODE: sessions run on the test backend ${testBackendModule} (${TEST_BACKEND_ENV}), not on the GPU`);

  // Kept per workspace; a window without one keeps nothing across a reload.
  const kept = new WindowState(context.storageUri && join(context.storageUri.fsPath, 'window-state.json'), (message) => log.warn(message));
  const inlineDiff = new InlineDiffController(log, kept);
  const kernels = new KernelIndex(log, (uri) => inlineDiff.hasReview(uri));
  inlineDiff.onDidChangeReview(() => kernels.refresh());
  const relative = (uri: vscode.Uri) => vscode.workspace.asRelativePath(uri, false);
  /** Where a save dialog starts: the first workspace folder, else the extension's storage. */
  const saveFolder = () => vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(storage);
  const sessions = new SessionManager(history, log, inlineDiff, relative);
  const tree = new HistoryTreeProvider(history, log);
  const historyView = vscode.window.createTreeView<HistoryNode>('kernelTuner.history', { treeDataProvider: tree, showCollapseAll: true });
  let runtime: Promise<EngineRuntime> | undefined;
  let last: { sessionId: string; finished: Promise<void> } | undefined;

  const loadRuntime = (): Promise<EngineRuntime> => {
    // A separate bundle, required on first use: `require` with a computed path keeps esbuild from inlining it.
    runtime ??= Promise.resolve().then(() => {
      const started = Date.now();
      const mod = require(join(context.extensionPath, 'dist', 'engine-runtime.js')) as { runtime: EngineRuntime };
      log.info(`engine loaded in ${Date.now() - started} ms`);
      return mod.runtime;
    });
    runtime.catch(() => (runtime = undefined));
    return runtime;
  };

  const panels = new PanelManager(context.extensionUri, sessions, (message) => onPanelMessage(message), log, kept);

  async function onPanelMessage(message: FromWebviewMessage): Promise<void> {
    switch (message.type) {
      case 'cancel':
        sessions.cancel(message.sessionId);
        return;
      case 'approvePlan':
        if (!sessions.approvePlan(message.sessionId, message.steps)) void vscode.window.showWarningMessage('This session is not waiting for a plan approval any more.');
        return;
      case 'showDiff':
      case 'openSideBySide': {
        const shown = await showSessionDiff(message.sessionId, { stepId: message.stepId });
        if (shown && message.type === 'openSideBySide') await inlineDiff.openSideBySide(shown);
        return;
      }
      case 'branch':
        await branchFrom(message.sessionId, message.stepId);
        return;
      case 'exportChart':
        await exportChart(message.sessionId, message.format, message.data);
        return;
      case 'proposeVariant':
        await showSessionDiff(message.sessionId, { variantId: message.variantId });
        return;
      case 'branchVariant':
        await branchFromVariant(message.sessionId, message.variantId);
        return;
      case 'evolveFurther':
        await evolveFurther(message.sessionId);
        return;
      case 'ready':
      case 'rendered':
        return;
    }
  }

  /** Saves the panel's chart where the user chooses (a bad image from the webview is refused before the dialog). */
  async function exportChart(sessionId: string, format: ChartImageFormat, data: string): Promise<void> {
    const bytes = chartImageBytes(format, data);
    const kernelName = (await sessions.snapshot(sessionId))?.header.kernelName ?? 'kernel';
    const dest = await vscode.window.showSaveDialog({
      defaultUri: vscode.Uri.joinPath(saveFolder(), chartFileName(kernelName, format)),
      filters: format === 'png' ? { 'PNG image': ['png'] } : { 'SVG image': ['svg'] },
      title: `Save the performance chart as ${format.toUpperCase()}`,
    });
    if (!dest) return;
    await vscode.workspace.fs.writeFile(dest, bytes);
    void announceSaved(`Saved the chart to ${relative(dest)}.`, dest);
  }

  /** The session as its panel shows it (from its log). */
  async function sessionView(sessionId: string): Promise<SessionView | undefined> {
    const snapshot = await sessions.snapshot(sessionId);
    return snapshot && reduceAll(snapshot.header, snapshot.events);
  }

  /** Which kernel of a session: the final one (no step), an accepted step's, or a variant of its population. */
  type SessionKernel = { stepId: string | null } | { variantId: string };

  /** Opens the inline diff of a kernel of a session (SessionKernel). Returns the document's uri. */
  async function showSessionDiff(sessionId: string, which: SessionKernel): Promise<vscode.Uri | undefined> {
    const entry = await history.get(sessionId);
    if (!entry) throw new Error(`no session ${sessionId} in the history`);
    const view = await sessionView(sessionId);
    let code: string | undefined;
    let title: string;
    if ('variantId' in which) {
      if (!view) throw new Error('this session has no population');
      const variant = await variantKernel(view, which.variantId);
      code = variant.code;
      title = `${entry.kernelName}: variant ${variant.variant.id}`;
    } else {
      const { stepId } = which;
      code = stepId === null ? (view?.final?.finalCode ?? entry.finalCode) : view && stepCode(view, stepId);
      if (!code) throw new Error(stepId === null ? 'this session has no final kernel' : 'this step changed nothing that could be applied');
      title = stepId === null ? `${entry.kernelName} tuned` : `${entry.kernelName} after ${view?.steps[stepId]?.title ?? stepId}`;
    }
    const uri = entry.fileUri ? vscode.Uri.parse(entry.fileUri) : vscode.Uri.file(entry.filePath);
    await sessions.showDiff(sessionId, entry.kernelName, code, entry.originalCode, uri, title);
    return uri;
  }

  const settingsGetter = () => {
    const config = vscode.workspace.getConfiguration(SECTION);
    return (key: string) => config.get(key);
  };

  async function openSettings(setting?: string): Promise<void> {
    await vscode.commands.executeCommand('workbench.action.openSettings', setting ?? SECTION);
  }

  /** Settings and the API key; on a problem, tells the user with the button that fixes it and returns undefined. */
  async function engineConfig(): Promise<{ config: EngineConfig; endpoint: string } | undefined> {
    const apiKey = await context.secrets.get(API_KEY_SECRET);
    const result = readEngineConfig(settingsGetter(), apiKey);
    if (result.ok) return withKeyConsent(result);
    if (result.needsApiKey && result.problems.length === 0) {
      const choice = await vscode.window.showErrorMessage('Kernel Tuner needs an API key for OpenAI. It is kept in VS Code\'s secret storage, never in settings.', 'Set API key', 'Open settings');
      if (choice === 'Set API key') await vscode.commands.executeCommand('kernelTuner.setApiKey');
      if (choice === 'Open settings') await openSettings(`${SECTION}.llm`);
      return undefined;
    }
    const first = result.problems[0]!;
    const more = result.problems.length > 1 ? ` (and ${result.problems.length - 1} more problem(s))` : '';
    const choice = await vscode.window.showErrorMessage(`Setting ${first.setting} ${first.message}${more}.`, 'Open settings');
    if (choice) await openSettings(first.setting);
    return undefined;
  }

  /**
   * The stored API key goes to a server the user's own settings name; to a base URL from the workspace's settings (a
   * repository's .vscode/settings.json can set one) only once the user said so, asked once per URL. Undefined: the
   * user closed the question (no session starts).
   */
  async function withKeyConsent(settings: { config: EngineConfig; endpoint: string }): Promise<{ config: EngineConfig; endpoint: string } | undefined> {
    const { llm } = settings.config;
    const url = llm.baseUrl;
    if (llm.provider !== 'openai' || llm.apiKey === undefined || url === undefined || !setByWorkspace(vscode.workspace.getConfiguration(SECTION).inspect('llm.baseUrl'))) return settings;
    const answers = context.globalState.get<Record<string, boolean>>(KEY_CONSENT_STATE, {});
    let send = answers[url];
    if (send === undefined) {
      const choice = await vscode.window.showWarningMessage(
        `This workspace's settings (kernelTuner.llm.baseUrl) send Kernel Tuner's requests to ${url}. Send your stored API key there too?`,
        { modal: true, detail: "The kernel's code goes there either way. Your answer is kept for this URL until the API key is set or cleared again." },
        'Send the key',
        'Do not send it',
      );
      if (choice === undefined) return undefined;
      send = choice === 'Send the key';
      await context.globalState.update(KEY_CONSENT_STATE, { ...answers, [url]: send });
    }
    if (send) return settings;
    log.info(`the stored API key is not sent to ${url}, which the workspace's settings name (as the user answered)`);
    const { apiKey: _withheld, ...withoutKey } = llm;
    return { ...settings, config: { ...settings.config, llm: withoutKey } };
  }

  /**
   * Tells every failed check in one message; `offer`: a way on without a GPU, first among the buttons where the GPU
   * failed. Returns once the message is up (its buttons act whenever they are clicked).
   */
  function reportFailures(failures: EngineFailure[], offer?: NoGpuOffer): void {
    for (const f of failures) log.error(`pre-flight: ${f.kind}: ${f.message}`);
    const report = describeFailures(failures, SECTION);
    const offered = offer && failures.some((f) => f.kind === 'gpu-unavailable') ? offer : undefined;
    void vscode.window.showErrorMessage(report.message, ...(offered ? [offered.label] : []), ...report.actions).then(async (choice) => {
      try {
        if (offered && choice === offered.label) await offered.run();
        if (choice === 'Show log') log.show();
        if (choice === 'Set API key') await vscode.commands.executeCommand('kernelTuner.setApiKey');
        if (choice === 'Open settings') await openSettings(report.settings);
        if (choice === 'GPU setup') await openWalkthrough(WALKTHROUGH_GPU_STEP);
      } catch (error) {
        const text = error instanceof Error ? error.message : String(error);
        log.error(`${choice}: ${text}`);
        void vscode.window.showErrorMessage(`Kernel Tuner: ${text}`);
      }
    });
  }

  /** The Getting Started walkthrough, at one of its steps (VS Code qualifies the step's id with the category's). */
  async function openWalkthrough(step?: string): Promise<void> {
    const category = `${context.extension.id}#${WALKTHROUGH}`;
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', step ? { category, step } : category, false);
  }

  /**
   * The GPU opens and, for a session that asks a model (`model`), the LLM answers, checked side by side; undefined when
   * either fails, after the progress has closed and every failure was told in one message.
   */
  async function preflight(gpus: GpuSelection, model?: { config: EngineConfig; endpoint: string }, offer?: NoGpuOffer): Promise<{ engine: EngineRuntime; backend: BackendLease } | undefined> {
    // In the status bar, which drops it the moment the check ends (a notification would stay a moment longer, beside
    // the error that follows).
    const checked = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: model ? `Kernel Tuner: checking ${model.endpoint} and the GPU…` : 'Kernel Tuner: opening the GPU…' },
      async (): Promise<{ engine: EngineRuntime; backend: BackendLease } | { failures: EngineFailure[] }> => {
        let engine: EngineRuntime;
        try {
          engine = await loadRuntime();
        } catch (error) {
          return { failures: [{ kind: 'other', message: `the engine could not be loaded: ${error instanceof Error ? error.message : String(error)}` }] };
        }
        const [llm, gpu] = await Promise.allSettled([
          model ? engine.checkLlm(model.config) : Promise.resolve(),
          engine.openBackend({ gpus, ...(testBackendModule && { testBackendModule }) }),
        ]);
        if (llm.status === 'fulfilled' && gpu.status === 'fulfilled') return { engine, backend: gpu.value };
        if (gpu.status === 'fulfilled') await gpu.value.dispose().catch(() => undefined);
        return { failures: [llm, gpu].flatMap((r) => (r.status === 'rejected' ? [asFailure(r.reason)] : [])) };
      },
    );
    if ('failures' in checked) {
      reportFailures(checked.failures, offer);
      return undefined;
    }
    return checked;
  }

  /** The GPUs the settings choose; undefined after telling a bad setting, with the button that opens it. */
  async function gpuSelection(): Promise<GpuSelection | undefined> {
    const { gpus, problems } = readGpuSettings(settingsGetter());
    if (problems.length === 0) return gpus;
    const choice = await vscode.window.showErrorMessage(`Setting ${problems[0]!.setting} ${problems[0]!.message}.`, 'Open settings');
    if (choice) await openSettings(problems[0]!.setting);
    return undefined;
  }

  /** "Check the model" (the walkthrough's, and the palette's): the model's part of the pre-flight, its outcome told. */
  async function checkModel(): Promise<boolean> {
    const settings = await engineConfig();
    if (!settings) return false;
    const failure = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `Kernel Tuner: checking ${settings.endpoint}…` }, () =>
      loadRuntime().then((engine) => engine.checkLlm(settings.config)).then(() => undefined, asFailure),
    );
    if (failure) {
      reportFailures([failure]);
      return false;
    }
    await vscode.commands.executeCommand('setContext', 'kernelTuner.modelChecked', true);
    void vscode.window.showInformationMessage(`Kernel Tuner: the model answers (${settings.config.llm.model} at ${settings.endpoint}).`);
    return true;
  }

  /** "Check the GPU and toolkit": the GPU's part of the pre-flight (the GPUs open, their compiler loads), its outcome told. */
  async function checkGpu(): Promise<DeviceInfo | undefined> {
    const gpus = await gpuSelection();
    const ready = gpus && (await preflight(gpus));
    if (!ready) return undefined;
    const { device } = ready.backend;
    await ready.backend.dispose();
    await vscode.commands.executeCommand('setContext', 'kernelTuner.gpuChecked', true);
    void vscode.window.showInformationMessage(`Kernel Tuner: the GPU is ready: ${device.gpus ? `${device.gpus} × ` : ''}${device.name} (${device.arch}).`);
    return device;
  }

  /** The kernel a "Tune this kernel" lens passes; undefined for any other argument (the menu's uri, none). */
  function lensTarget(arg: unknown): KernelTarget | undefined {
    const lens = arg as KernelTarget | undefined;
    return lens && typeof lens === 'object' && 'kernelName' in lens && lens.uri instanceof vscode.Uri ? lens : undefined;
  }

  /** The document "Tune this kernel" was asked for: the lens's, the menu's, else the active editor's. */
  function targetUri(arg: unknown): vscode.Uri | undefined {
    return lensTarget(arg)?.uri ?? (arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri);
  }

  /** Which kernel to tune: the lens's, the one under the cursor, or one picked from the file's kernels. */
  async function resolveTarget(arg: unknown): Promise<{ document: vscode.TextDocument; kernelName: string } | undefined> {
    const lens = lensTarget(arg);
    if (lens) return { document: await vscode.workspace.openTextDocument(lens.uri), kernelName: lens.kernelName };
    const editor = vscode.window.activeTextEditor;
    const fromMenu = arg instanceof vscode.Uri ? arg : undefined;
    const document = fromMenu && editor?.document.uri.toString() !== fromMenu.toString() ? await vscode.workspace.openTextDocument(fromMenu) : editor?.document;
    if (!document || !isCudaDocument(document)) {
      void vscode.window.showErrorMessage('Open a CUDA file (.cu or .cuh) and put the cursor inside a __global__ kernel to tune it.');
      return undefined;
    }
    const parsed = await kernels.kernels(document);
    if (editor && editor.document === document) {
      const atCursor = await kernels.kernelAtCursor(editor);
      if (atCursor) return { document, kernelName: atCursor.name };
    }
    if (parsed.kernels.length === 0) {
      const detail = parsed.error ? ` It could not be read: ${parsed.error.message}` : '';
      const choice = await vscode.window.showErrorMessage(`No __global__ kernel found in ${relative(document.uri)}.${detail}`, ...(parsed.error ? ['Go to error'] : []));
      if (choice && parsed.error && editor?.document === document) {
        const pos = new vscode.Position(parsed.error.line, parsed.error.column);
        editor.selection = new vscode.Selection(pos, pos);
        editor.revealRange(new vscode.Range(pos, pos));
      }
      return undefined;
    }
    // The cursor is where the user right-clicked, when the menu brought us here.
    const where = editor && editor.document === document ? `Line ${editor.selection.active.line + 1} is not inside a __global__ kernel` : `${relative(document.uri)} is not the active editor`;
    const pick = await vscode.window.showQuickPick(
      parsed.kernels.map((k) => ({ label: k.qualifiedName, description: `line ${k.nameRange.startLine + 1}`, detail: k.signatureText.replace(/\s+/g, ' '), kernel: k })),
      { title: `${where}: which kernel should be tuned?`, placeHolder: 'Kernel to tune' },
    );
    return pick ? { document, kernelName: pick.kernel.name } : undefined;
  }

  /** What a session builds on: an interrupted one to continue, a stored one to branch or to replay. */
  type StoredStart = { resume: HistoryEntry; evolveFurther?: EvolveSettings } | { branch: NonNullable<StartRequest['branch']> } | { replay: HistoryEntry };

  /**
   * Whether a new session must wait, or may not run at all: the workspace is not trusted (tuning compiles and runs its
   * kernels), one session runs already (timings taken while another session uses the GPU would be worthless), or the
   * document holds an open proposal besides its own lines (nothing to tune there until it is decided). Says which, with
   * the way out.
   */
  async function mustWait(document: vscode.Uri | undefined): Promise<boolean> {
    if (!vscode.workspace.isTrusted) {
      log.info('tuning refused: the workspace is in Restricted Mode');
      void vscode.window
        .showWarningMessage("Tuning compiles and runs this workspace's kernels (and an LLM session sends them to the model): trust the workspace to tune. Its history and reports stay readable in Restricted Mode.", 'Manage Workspace Trust')
        .then((choice) => choice && vscode.commands.executeCommand('workbench.trust.manage'));
      return true;
    }
    const running = sessions.current();
    if (running) {
      const choice = await vscode.window.showWarningMessage('A tuning session is already running; timings of two sessions on one GPU would disturb each other.', 'Show it', 'Cancel it');
      if (choice === 'Show it') await vscode.commands.executeCommand('kernelTuner.showPanel', running);
      if (choice === 'Cancel it') sessions.cancel(running);
      return true;
    }
    if (document && inlineDiff.hasReview(document)) {
      void vscode.window.showWarningMessage(`${relative(document)} has a proposal to review: accept or reject it (the lenses at the top) before tuning again.`);
      return true;
    }
    return false;
  }

  async function tune(arg: unknown, stored?: StoredStart): Promise<void> {
    const base = stored && ('resume' in stored ? stored.resume : 'branch' in stored ? stored.branch.parent : stored.replay);
    if (await mustWait(base ? (base.fileUri ? vscode.Uri.parse(base.fileUri) : vscode.Uri.file(base.filePath)) : targetUri(arg))) return;
    const target = base ? { document: await openEntryDocument(base), kernelName: base.kernelName } : await resolveTarget(arg);
    if (!target) return;
    const settings = await engineConfig();
    if (!settings) return;
    const { config, endpoint } = settings;
    // A replay asks no model: only the GPU has to be there.
    const ready = await preflight(config.gpus, stored && 'replay' in stored ? undefined : { config, endpoint });
    if (!ready) return;
    const doing = !stored ? 'tuning' : 'resume' in stored ? (stored.evolveFurther ? 'evolving further' : 'resuming') : 'branch' in stored ? `branching ${stored.branch.parent.id} at step ${stored.branch.stepId}:` : `replaying ${stored.replay.id}:`;
    log.info(`${doing} ${target.kernelName} in ${relative(target.document.uri)} on ${ready.backend.device.gpus ? `${ready.backend.device.gpus} x ` : ''}${ready.backend.device.name}`);
    log.debug(`engine config: ${JSON.stringify(redactConfig(config))}`);
    try {
      const started = await sessions.start({ document: target.document, kernelName: target.kernelName, config, runtime: ready.engine, backend: ready.backend, checkpointDir, ...stored });
      last = started;
      await panels.show(started.sessionId, target.kernelName, true);
    } catch (error) {
      await ready.backend.dispose().catch(() => undefined);
      throw error;
    }
  }

  /**
   * "Tune parameters": the tuner alone over the kernel's tuning spec (the lens's, the one beside the file that names the
   * kernel, or one the user picks), as a session of one step. It asks no model, so the LLM's pre-flight does not apply.
   */
  async function tuneParameters(arg: unknown): Promise<void> {
    if (await mustWait(targetUri(arg))) return;
    const target = await resolveTarget(arg);
    if (!target) return;
    if (target.document.uri.scheme !== 'file') {
      void vscode.window.showErrorMessage('Save the kernel as a file first: its tuning spec names the file it tunes (`file:`).');
      return;
    }
    const lensSpec = (arg as Partial<ParametersTarget> | undefined)?.specPath;
    const specPath = typeof lensSpec === 'string' ? lensSpec : await pickSpec(target.document, target.kernelName);
    if (!specPath) return;
    const { sanitize, problems: sanitizeProblems } = readSanitizeSetting(settingsGetter());
    if (sanitizeProblems.length > 0) {
      const choice = await vscode.window.showErrorMessage(`Setting ${sanitizeProblems[0]!.setting} ${sanitizeProblems[0]!.message}.`, 'Open settings');
      if (choice) await openSettings(sanitizeProblems[0]!.setting);
      return;
    }
    const startOn = async (engine: EngineRuntime, on: BackendLease | { replay: string }) => {
      const where = 'replay' in on ? `replaying ${relative(vscode.Uri.file(on.replay))} (no GPU)` : `on ${on.device.gpus ? `${on.device.gpus} x ` : ''}${on.device.name}`;
      log.info(`tuning the parameters of ${target.kernelName} in ${relative(target.document.uri)} with ${relative(vscode.Uri.file(specPath))} ${where}`);
      const started = await sessions.startTuning({ document: target.document, kernelName: target.kernelName, specPath, sanitize: sanitize && !('replay' in on), runtime: engine, on });
      last = started;
      await panels.show(started.sessionId, target.kernelName, true);
    };
    const replay = (cache: string) => loadRuntime().then((engine) => startOn(engine, { replay: cache }));
    const asked = (arg as Partial<ParametersTarget> | undefined)?.replay;
    if (typeof asked === 'string') return replay(asked);
    const gpus = await gpuSelection();
    if (!gpus) return;
    // Without a GPU, a recorded run of the same search beside the spec can be replayed instead (tune --simulate-if-no-gpu).
    const parameters = specsBeside(target.document.uri.fsPath).find((s) => s.path === specPath)?.parameters ?? [];
    const cache = cachesBeside(specPath, target.kernelName, parameters)[0];
    const ready = await preflight(gpus, undefined, cache ? { label: `Replay ${basename(cache)}`, run: () => replay(cache) } : undefined);
    if (!ready) return;
    try {
      await startOn(ready.engine, ready.backend);
    } catch (error) {
      await ready.backend.dispose().catch(() => undefined);
      throw error;
    }
  }

  /** The kernel's spec: the one beside its file that names it, one of several picked, or one chosen in a file dialog. */
  async function pickSpec(document: vscode.TextDocument, kernelName: string): Promise<string | undefined> {
    const parsed = await kernels.kernels(document);
    const kernel = parsed.kernels.find((k) => k.name === kernelName);
    const found = kernel ? specsForKernel(specsBeside(document.uri.fsPath), kernel, parsed.kernels.length) : [];
    if (found.length === 1) return found[0]!.path;
    if (found.length > 1) {
      const pick = await vscode.window.showQuickPick(
        found.map((f) => ({ label: relative(vscode.Uri.file(f.path)), description: f.parameters.join(', '), path: f.path })),
        { title: `Tune the parameters of ${kernelName} with which spec?` },
      );
      return pick?.path;
    }
    const picked = await vscode.window.showOpenDialog({
      title: `No tuning spec beside ${relative(document.uri)} names ${kernelName}: pick its spec (its inputs, tunable parameters and restrictions)`,
      defaultUri: vscode.Uri.file(dirname(document.uri.fsPath)),
      canSelectMany: false,
      filters: { 'Tuning spec (YAML or JSON)': ['yaml', 'yml', 'json'] },
    });
    return picked?.[0]?.fsPath;
  }

  /** A session of the tuner alone: no model to resume with, no steps of a model to branch from or replay. */
  function refusedForTunerSession(entry: HistoryEntry, action: string): boolean {
    if (!(isSessionReport(entry.report) && entry.report.header.strategy === 'tuner')) return false;
    void vscode.window.showInformationMessage(`A "Tune parameters" session cannot be ${action}: it asked no model. Run "Tune parameters" on the kernel again.`);
    return true;
  }

  async function openEntryDocument(entry: HistoryEntry): Promise<vscode.TextDocument> {
    return vscode.workspace.openTextDocument(entry.fileUri ? vscode.Uri.parse(entry.fileUri) : vscode.Uri.file(entry.filePath));
  }

  async function entryFor(arg: unknown): Promise<HistoryEntry | undefined> {
    const id = sessionIdOf(arg, historyView);
    if (!id) return undefined;
    const entry = await history.get(id);
    if (!entry) void vscode.window.showWarningMessage('That session is no longer in the history.');
    return entry;
  }

  async function exportEntry(arg: unknown, format: 'json' | 'kernel-tuner-cache'): Promise<void> {
    const entry = await entryFor(arg);
    if (!entry) return;
    // The report as its events read now: a session stored before a field was recorded exports it too.
    const stored = isSessionReport(entry.report) ? entry.report : undefined;
    const report = stored && buildReport(stored.header, stored.events, reduceAll(stored.header, stored.events));
    // What cannot be exported is said before asking where to.
    if (format === 'kernel-tuner-cache') toKernelTunerCache(entry, report ?? entry.report);
    const suffix = format === 'json' ? 'report.json' : 'cache.json';
    const dest = await vscode.window.showSaveDialog({
      defaultUri: vscode.Uri.joinPath(saveFolder(), `${entry.kernelName}-${entry.id}-${suffix}`),
      filters: { JSON: ['json'] },
      title: format === 'json' ? 'Export the session as a JSON report' : 'Export the final step as a Kernel Tuner cache',
    });
    if (!dest) return;
    await history.export(entry.id, format, dest.fsPath, report);
    void announceSaved(`Exported to ${relative(dest)}.`, dest);
  }

  /** Files the user edits before a branch starts from them: `<id>.cu`, with `<id>.json` saying which session and step. */
  const draftsDir = join(storage, 'branch-drafts');
  const isDraft = (uri: vscode.Uri | undefined) => uri?.scheme === 'file' && dirname(uri.fsPath) === draftsDir && uri.fsPath.endsWith('.cu');
  const updateDraftContext = () => void vscode.commands.executeCommand('setContext', 'kernelTuner.branchDraft', isDraft(vscode.window.activeTextEditor?.document.uri));

  /**
   * Starts a branch of a stored session at one of its steps (the tree's step, the panel's, or one picked): as it was,
   * or after the user edits the kernel that step started from, in an editor (`kernelTuner.branch.continue` then starts
   * it; the draft is a file, so it survives a reload).
   */
  async function branchFrom(arg: unknown, stepArg: unknown, howArg?: unknown): Promise<void> {
    const entry = await entryFor(arg);
    if (!entry || refusedForTunerSession(entry, 'branched')) return;
    const events = isSessionReport(entry.report) ? entry.report.events : [];
    const started = startedStepsOf(events);
    const node = arg as HistoryNode | undefined;
    let stepId = typeof stepArg === 'string' ? stepArg : node && typeof node === 'object' && node.kind === 'step' ? node.step.stepId : undefined;
    if (stepId === undefined) {
      const pick = await vscode.window.showQuickPick(started.map((s) => ({ label: `${s.stepId}. ${s.title}`, stepId: s.stepId })), { title: 'Start a branch from which step?' });
      if (!pick) return;
      stepId = pick.stepId;
    }
    const step = started.find((s) => s.stepId === stepId);
    if (!step) return void vscode.window.showWarningMessage(`Step ${stepId} never started in this session: a branch starts from a step that ran.`);
    // Callers may say how (`as-it-was` or `edit`, e.g. a keybinding); else the user picks.
    const how =
      howArg === 'as-it-was' || howArg === 'edit'
        ? { edit: howArg === 'edit' }
        : await vscode.window.showQuickPick(
            [
              { label: '$(debug-restart) As it was', detail: `Run "${step.title}" and every step after it again, from the kernel as it was then.`, edit: false },
              { label: '$(edit) Edit the kernel first', detail: `Open the kernel "${step.title}" started from; the branch starts from your version.`, edit: true },
            ],
            { title: `Branch from step ${stepId}: ${step.title}` },
          );
    if (!how) return;
    if (!how.edit) return tune(undefined, { branch: { parent: entry, stepId, stepTitle: step.title } });
    await mkdir(draftsDir, { recursive: true });
    const name = `${entry.id}-step-${stepId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const draft = vscode.Uri.file(join(draftsDir, `${name}.cu`));
    await writeFile(join(draftsDir, `${name}.json`), JSON.stringify({ sessionId: entry.id, stepId, stepTitle: step.title }));
    // An edit started before (a branch it made failed, or a reload came between) is kept, not overwritten.
    await writeFile(draft.fsPath, codeBeforeStep(events, stepId, entry.originalCode), { flag: 'wx' }).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(draft), { preview: false });
    updateDraftContext();
    void vscode.window.showInformationMessage(`Edit the kernel as step ${stepId} should start from it, then continue the branch (▶ in the editor's title bar).`, 'Continue now').then((choice) => {
      if (choice) void vscode.commands.executeCommand('kernelTuner.branch.continue', draft);
    });
  }

  /** Starts the branch a draft (the active editor, or `arg`) was opened for, from the draft's text. */
  async function continueBranch(arg: unknown): Promise<void> {
    const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    if (!uri || !isDraft(uri)) return void vscode.window.showInformationMessage('Open the kernel of a branch first: "Branch from this step…" on a step of a session, then "Edit the kernel first".');
    const document = await vscode.workspace.openTextDocument(uri);
    const about = JSON.parse(await readFile(uri.fsPath.replace(/\.cu$/, '.json'), 'utf8')) as { sessionId: string; stepId: string; stepTitle: string };
    const parent = await history.get(about.sessionId);
    if (!parent) return void vscode.window.showWarningMessage('The session this kernel was opened from is no longer in the history.');
    await tune(undefined, { branch: { parent, stepId: about.stepId, stepTitle: about.stepTitle, editedCode: document.getText() } });
  }

  /**
   * "Branch from here" on a variant of an evolutionary session: a new session, a branch from the variant's child step
   * with the variant's code (its values defined) in place, which enters the branch's population as its kernel.
   */
  async function branchFromVariant(sessionId: string, variantId: string): Promise<void> {
    const entry = await entryFor(sessionId);
    const view = entry && (await sessionView(entry.id));
    if (!entry || !view) return;
    const { variant, code } = await variantKernel(view, variantId);
    if (!variant.stepId) return void vscode.window.showInformationMessage(`${variant.id} is where the session started, not a child of it: tune the kernel again to start from it.`);
    await tune(undefined, { branch: { parent: entry, stepId: variant.stepId, stepTitle: `${view.steps[variant.stepId]?.title ?? variant.stepId}, which made ${variant.id}`, editedCode: code } });
  }

  /** "Evolve further" on a finished evolutionary session: more of whatever stopped it (asked), then its population evolves on. */
  async function evolveFurther(sessionId: string): Promise<void> {
    const entry = await entryFor(sessionId);
    if (!entry) return;
    if (entry.status !== 'completed' || entry.run?.strategy.kind !== 'evolutionary') return void vscode.window.showInformationMessage('Only a finished evolutionary session can evolve further.');
    let settings: EvolveSettings = { budget: entry.run.budget ?? {}, strategy: entry.run.strategy };
    for (const question of evolveFurtherQuestions(settings, (await sessionView(sessionId))?.population)) {
      const answer = await vscode.window.showInputBox({ title: question.title, prompt: question.prompt, value: question.value, validateInput: question.validate, ignoreFocusOut: true });
      if (answer === undefined) return;
      settings = question.apply(settings, answer);
    }
    await tune(undefined, { resume: entry, evolveFurther: settings });
  }

  async function pickReplayable(): Promise<HistoryEntry | undefined> {
    const replayable = (await history.list()).sessions.filter((s) => s.replayable);
    if (replayable.length === 0) return void vscode.window.showInformationMessage('No stored session has recorded model exchanges to replay.');
    const pick = await vscode.window.showQuickPick(replayable.map((s) => ({ label: s.kernelName, description: `${s.status} · ${s.createdAt.slice(0, 16).replace('T', ' ')}`, id: s.id })), { title: 'Replay which session?' });
    return pick && history.get(pick.id);
  }

  const command = (id: string, run: (...args: unknown[]) => unknown) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await run(...args);
      } catch (error) {
        const text = error instanceof Error ? error.message : String(error);
        log.error(`${id}: ${text}`);
        void vscode.window.showErrorMessage(`Kernel Tuner: ${text}`, 'Show log').then((c) => c && log.show());
        return undefined;
      }
    });

  context.subscriptions.push(
    log,
    inlineDiff,
    kernels,
    sessions,
    tree,
    historyView,
    panels,
    command('kernelTuner.tuneKernel', (arg) => tune(arg)),
    command('kernelTuner.tuneParameters', (arg) => tuneParameters(arg)),
    command('kernelTuner.cancel', (arg) => {
      const id = typeof arg === 'string' ? arg : sessions.current();
      if (!id || !sessions.cancel(id)) void vscode.window.showInformationMessage('No tuning session is running.');
    }),
    // The session asked for, else the one started last here, one running, the report in front last, the newest stored.
    command('kernelTuner.showPanel', async (arg) => {
      const id = typeof arg === 'string' ? arg : (last?.sessionId ?? sessions.current() ?? panels.mostRecent() ?? (await history.list()).sessions[0]?.id);
      const snapshot = id ? await sessions.snapshot(id) : undefined;
      if (!id || !snapshot) return void vscode.window.showInformationMessage('No tuning session to show yet: tune a kernel ("Tune this kernel" above it), or open the Getting Started walkthrough.');
      await panels.show(id, snapshot.header.kernelName);
      return id;
    }),
    command('kernelTuner.acceptHunk', (uri, id) => inlineDiff.acceptHunk(uri as vscode.Uri | undefined, id as string | undefined)),
    command('kernelTuner.rejectHunk', (uri, id) => inlineDiff.rejectHunk(uri as vscode.Uri | undefined, id as string | undefined)),
    command('kernelTuner.acceptAll', (uri) => inlineDiff.acceptAll(uri instanceof vscode.Uri ? uri : undefined)),
    command('kernelTuner.rejectAll', (uri) => inlineDiff.rejectAll(uri instanceof vscode.Uri ? uri : undefined)),
    command('kernelTuner.openSideBySide', (uri) => inlineDiff.openSideBySide(uri instanceof vscode.Uri ? uri : undefined)),
    command('kernelTuner.nextHunk', (uri) => inlineDiff.revealNext(uri instanceof vscode.Uri ? uri : undefined)),
    command('kernelTuner.setApiKey', async () => {
      const key = await vscode.window.showInputBox({
        title: 'Kernel Tuner: API key for the OpenAI-compatible server',
        prompt: 'Stored in VS Code\'s secret storage (the OS keychain), never in settings or logs. Leave empty to remove the stored key.',
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return;
      // A new key (or none) is asked about again wherever a workspace's settings send it.
      await context.globalState.update(KEY_CONSENT_STATE, undefined);
      if (key.trim() === '') {
        await context.secrets.delete(API_KEY_SECRET);
        void vscode.window.showInformationMessage('Kernel Tuner: the API key was removed.');
      } else {
        await context.secrets.store(API_KEY_SECRET, key.trim());
        void vscode.window.showInformationMessage('Kernel Tuner: the API key was stored.');
      }
    }),
    command('kernelTuner.clearApiKey', async () => {
      await context.secrets.delete(API_KEY_SECRET);
      await context.globalState.update(KEY_CONSENT_STATE, undefined);
      void vscode.window.showInformationMessage('Kernel Tuner: the API key was removed.');
    }),
    command('kernelTuner.showLog', () => log.show()),
    command('kernelTuner.chooseModel', (arg) => chooseModel(arg as Partial<ModelChoice> | undefined)),
    command('kernelTuner.checkModel', () => checkModel()),
    command('kernelTuner.checkGpu', () => checkGpu()),
    command('kernelTuner.openExample', () => openExample(context.extensionPath, storage)),
    command('kernelTuner.replayExample', () => replayExample(context.extensionPath, storage)),
    command('kernelTuner.openWalkthrough', () => openWalkthrough()),
    command('kernelTuner.history.refresh', () => tree.refresh()),
    command('kernelTuner.history.open', async (arg) => {
      const entry = await entryFor(arg);
      if (entry) await panels.show(entry.id, entry.kernelName);
    }),
    command('kernelTuner.history.applyAgain', async (arg) => {
      const entry = await entryFor(arg);
      if (entry) await showSessionDiff(entry.id, { stepId: null });
    }),
    command('kernelTuner.history.resume', async (arg) => {
      const entry = await entryFor(arg);
      if (!entry || refusedForTunerSession(entry, 'resumed')) return;
      if (entry.status !== 'interrupted') return void vscode.window.showInformationMessage(`This session is ${entry.status}; only an interrupted session can be resumed.`);
      if (!isSessionReport(entry.report)) return void vscode.window.showWarningMessage('This session was stored without its report and cannot be resumed.');
      await tune(undefined, { resume: entry });
    }),
    command('kernelTuner.history.branch', (arg, stepArg, how) => branchFrom(arg, stepArg, how)),
    command('kernelTuner.branch.continue', (arg) => continueBranch(arg)),
    command('kernelTuner.history.replay', async (arg) => {
      const entry = arg === undefined ? await pickReplayable() : await entryFor(arg);
      if (!entry || refusedForTunerSession(entry, 'replayed')) return;
      if (!isReplayable(entry)) return void vscode.window.showWarningMessage('This session was stored without its model exchanges (before they were recorded): it cannot be replayed.');
      await tune(undefined, { replay: entry });
    }),
    command('kernelTuner.history.exportJson', (arg) => exportEntry(arg, 'json')),
    command('kernelTuner.history.exportCache', (arg) => exportEntry(arg, 'kernel-tuner-cache')),
    ...htmlReportCommands(command, entryFor, saveFolder, () => panels.placeNewPanel()),
    command('kernelTuner.history.delete', async (arg) => {
      const entry = await entryFor(arg);
      if (!entry) return;
      if (sessions.isLive(entry.id)) return void vscode.window.showWarningMessage('Cancel the session before deleting it.');
      const choice = await vscode.window.showWarningMessage(`Delete the session of ${entry.kernelName} from ${entry.createdAt.slice(0, 10)}?`, { modal: true }, 'Delete');
      if (choice !== 'Delete') return;
      panels.close(entry.id);
      await history.delete(entry.id);
    }),
  );

  // A session's chart draws its parent's and its branches' steps beside its own; they change as they run (a running
  // session saves every half second: one refresh per burst, for the sessions saved in it).
  let relatedTimer: ReturnType<typeof setTimeout> | undefined;
  const savedSessions = new Set<string>();
  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(updateDraftContext),
    history.onDidChange(({ id }) => {
      savedSessions.add(id);
      relatedTimer ??= setTimeout(() => {
        relatedTimer = undefined;
        const changed = new Set(savedSessions);
        savedSessions.clear();
        void panels.refreshRelated(changed);
      }, 300);
    }),
    { dispose: () => relatedTimer && clearTimeout(relatedTimer) },
  );
  updateDraftContext();
  // Last: what the window keeps is written once more as it closes, after the panels and reviews are gone.
  context.subscriptions.push({ dispose: () => kept.flush() });
  void panels.reopen().catch((error: unknown) => log.error(`could not reopen the reports open before the reload: ${error instanceof Error ? error.message : String(error)}`));

  // Sessions that were running when their window went away become "interrupted" (resumable).
  void history.markInterruptedOnStartup().then(
    (ids) => ids.length > 0 && log.info(`history: ${ids.length} interrupted session(s) can be resumed: ${ids.join(', ')}`),
    (error: unknown) => log.error(`history: ${error instanceof Error ? error.message : String(error)}`),
  );

  return {
    sessions,
    panels,
    inlineDiff,
    history,
    historyTree: tree,
    lastSession: () => last,
  };
}

