/**
 * A session of the tuner alone ("Tune parameters" in the editor): a kernel that already has tunable parameters and a
 * tuning spec, searched with no model, as the same typed event stream as an LLM session of one step. The panel, the
 * history, the HTML report and the proposal of the final kernel serve it as they are.
 *
 * The step's baseline is the search's reference: the kernel at its reference configuration (the file's own values of
 * the parameters it #defines, else the first valid configuration, or the spec's referenceConfig), with the time the
 * search measured for it; a separate reference kernel (the spec's `reference:`) is the baseline itself, as in the
 * report of `tune`. The best configuration is accepted when it is faster, profiled after the timings, run under
 * compute-sanitizer where the session asks for it (hazards reject it: nothing is proposed), and proposed in the file as
 * an LLM session's final kernel is: its values in the file's `#define`s (or guarded ones), its launches rewritten for it.
 *
 * Where no GPU is present, the search can be replayed from a Kernel Tuner cache of the same spec (a recorded run, as
 * `tune --simulate` replays it): the spec's strategy searches the space with the cache's results, the device is the
 * one that recorded them, and the baseline is the file's own values as they were recorded (when the cache has them).
 */
import { basename } from 'node:path';
import type { CacheFile } from '../../tuner/cache/cache-file';
import { loadReplayCache, simulate } from '../../tuner/cache/simulate';
import { backendList, type TuningBackend } from '../../tuner/run/backend';
import type { SearchProgress } from '../../tuner/strategies';
import { checkOneModel } from '../../tuner/run/gpu-selection';
import { loadTuningSpec, tuningJob, type TuningJob } from '../../tuner/spec/tuning-spec';
import type { TuneOptions } from '../../tuner/tunable-kernel';
import { configKey, outcomeOf, type Config, type ConfigResult, type TuneResult } from '../../tuner/types';
import { finalizeKernel } from '../candidate/finalize';
import { PROFILE_TIMEOUT_MS, profileEvent } from '../candidate/run-tests';
import { findingLines } from '../../tuner/run/sanitizer';
import { improvementPct, PerformanceTracker } from '../candidate/tracker';
import { makeEvent, summarizeConfig, type TuningEvent, type TuningEventBody } from '../progress/events';
import { endedBy, eventsWhile, limitsEvent, type SessionEnd } from './session';
import { trackerSummary } from './graph/nodes/finish';

export interface TunerSessionOptions {
  threadId: string;
  /** The kernel file's text (an editor's buffer, unsaved edits included) and where the file is. */
  code: string;
  filePath: string;
  /** The tuning spec: the test's inputs, the parameters and restrictions, the geometry, how to measure. */
  specPath: string;
  /** Where the configurations run: one backend per GPU, all of one model; or a cache of this search to replay. */
  measure: { backend: TuningBackend | readonly TuningBackend[] } | { replay: string };
  /** Run the best configuration once under compute-sanitizer before it is proposed (kernelTuner.sanitize; not for a replay, which runs nothing). */
  sanitize: boolean;
  signal?: AbortSignal;
}

/** The one step of a session of the tuner alone. */
export const TUNER_STEP = { id: '1', title: 'Tune parameters' } as const;

/**
 * The session as events, ending in `session.finished`, `session.failed` or `session.cancelled` (never throws); returns
 * how it ended.
 */
export async function* tunerSession(o: TunerSessionOptions): AsyncGenerator<TuningEvent, SessionEnd> {
  try {
    const job = await tuningJob(loadTuningSpec(o.specPath), { file: o.filePath, source: o.code });
    const kernel = { name: job.kernel.name, signature: job.kernel.signature.signatureText };
    if ('replay' in o.measure) {
      const cache = loadReplayCache(o.measure.replay, job.kernel.name);
      const device = { name: cache.header.device_name, arch: '', computeCapability: [0, 0] as [number, number], replayedFrom: basename(o.measure.replay) };
      yield makeEvent({ type: 'session.started', threadId: o.threadId, resumed: false, kernel, device });
      yield* search(job, o, { replay: cache });
      return { status: 'finished' };
    }
    const backends = backendList(o.measure.backend);
    const devices = await Promise.all(backends.map((b) => b.describe()));
    checkOneModel(devices);
    const device = devices[0]!;
    yield makeEvent({
      type: 'session.started',
      threadId: o.threadId,
      resumed: false,
      kernel,
      device: { name: device.name, arch: device.arch, computeCapability: device.computeCapability, ...(backends.length > 1 && { gpus: backends.length }) },
    });
    const first = backends[0]!;
    if (first.speedLimits) yield await limitsEvent(first.speedLimits.bind(first));
    yield* search(job, o, { backends });
    return { status: 'finished' };
  } catch (thrown) {
    return yield* endedBy(thrown, o.signal);
  }
}

/** Where the search's configurations run: on the GPUs, or replayed from a cache of a recorded run. */
type Measure = { backends: readonly TuningBackend[] } | { replay: CacheFile };

async function* search(job: TuningJob, o: TunerSessionOptions, measure: Measure): AsyncGenerator<TuningEvent, void> {
  const { spec, kernel, test } = job;
  const { data, problemSize } = test.resolve(kernel.signature);
  const sizes = Array.isArray(problemSize) ? [...problemSize] : [problemSize];
  const outputs = data.kind === 'spec' ? data.test.arguments.filter((a) => a.kind === 'buffer' && a.output).map((a) => a.name) : [];
  yield makeEvent({
    type: 'tests.ready',
    tests: [{ id: basename(o.specPath), origin: 'user', problemSize: sizes, outputs, bytes: data.kind === 'spec' ? data.test.totalBytes : null, timeMs: null, work: job.work }],
  });
  const tuneParams = Object.fromEntries(Object.entries(job.tuneParams).map(([k, v]) => [k, [...v]]));
  const how = 'replay' in measure ? `the results recorded in ${basename(measure.replay.path)} on ${measure.replay.header.device_name} replayed, no GPU` : 'every configuration verified and timed';
  const step = { ...TUNER_STEP, details: `${spec.strategy} over ${Object.keys(tuneParams).join(', ')} as ${basename(o.specPath)} gives them, ${how}` };
  yield makeEvent({ type: 'plan', reason: 'initial', steps: [{ ...step, depth: 0, status: 'pending' }] });
  yield makeEvent({ type: 'step.started', stepId: step.id, title: step.title });
  yield makeEvent({ type: 'candidate', stepId: step.id, candidate: 0, attempt: 1, code: o.code, diff: '', tuneParams, restrictions: job.restrictions });

  let done = 0;
  let failures = 0;
  const result: TuneResult = yield* eventsWhile((writer) => {
    const onResult = (r: ConfigResult, p: SearchProgress) => {
      done++;
      if (outcomeOf(r.status) === 'failed') failures++;
      writer(makeEvent({ type: 'configs.evaluated', stepId: step.id, candidate: 0, done, total: p.total, failures, bestTimeMs: p.best?.timeMs ?? null, result: summarizeConfig(r) }));
    };
    if ('replay' in measure) return replayed(job, measure.replay, onResult);
    return kernel.tune(test, job.tuneParams, job.restrictions, { ...job.options, backend: measure.backends, ...(o.signal && { signal: o.signal }), profile: { timeoutMs: PROFILE_TIMEOUT_MS }, ...(o.sanitize && { sanitize: {} }), onResult });
  });
  o.signal?.throwIfAborted();
  const best = result.best;
  if (best?.timeMs === undefined) {
    const failed = result.results.find((r) => r.error)?.error?.message.split('\n', 1)[0];
    throw new Error(`no configuration of ${kernel.name} ran correctly${failed ? `: ${failed}` : ''} (every result is in the panel's table)`);
  }
  const profiled = profileEvent(result, { stepId: step.id, candidate: 0 });
  if (profiled) yield makeEvent(profiled);
  if (result.sanitizer) yield makeEvent({ type: 'sanitized', stepId: step.id, candidate: 0, verdict: result.sanitizer });

  const baseline = await baselineOf(job, result, measure, o.signal);
  const improved = baseline !== undefined && best.timeMs < baseline.timeMs;
  const tracker = new PerformanceTracker(baseline?.timeMs);
  if (baseline) yield makeEvent({ type: 'baseline', timeMs: baseline.timeMs, params: baseline.params, testId: basename(o.specPath) });
  if (result.sanitizer?.status === 'hazards') {
    yield makeEvent({ type: 'step.rejected', stepId: step.id, reason: { kind: 'hazard', findings: findingLines(result.sanitizer.findings), attempts: 1 } });
    yield* finished(job, o, baseline?.params ?? best.config, tracker, tuneParams, false);
    return;
  }
  // Without a baseline (a separate reference kernel whose time the search did not take) the best stands on its own.
  if (!baseline || improved) {
    const oldTimeMs = baseline?.timeMs ?? best.timeMs;
    tracker.addStep({ description: step.title, code: o.code, oldTimeMs, newTimeMs: best.timeMs, tunableParams: tuneParams, restrictions: job.restrictions, bestParams: best.config });
    yield makeEvent({ type: 'step.accepted', stepId: step.id, candidate: 0, oldTimeMs, newTimeMs: best.timeMs, improvementPct: improvementPct(oldTimeMs, best.timeMs), bestParams: best.config });
  } else {
    yield makeEvent({
      type: 'step.rejected',
      stepId: step.id,
      reason: { kind: 'insufficient_gain', oldTimeMs: baseline.timeMs, newTimeMs: best.timeMs, improvementPct: improvementPct(baseline.timeMs, best.timeMs), thresholdPct: 0 },
    });
  }
  yield* finished(job, o, improved || !baseline ? best.config : baseline.params, tracker, tuneParams, improved || !baseline);
}

/** The search replayed from a recorded run's cache; its reference is the kernel's own configuration, as on the GPU. */
async function replayed(job: TuningJob, cache: CacheFile, onResult: (r: ConfigResult, p: SearchProgress) => void): Promise<TuneResult> {
  const { result } = await simulate(job.spec, job.kernel.name, cache, { metrics: job.options }, onResult);
  const own = await job.kernel.ownConfiguration(job.tuneParams, job.restrictions, job.options);
  return { ...result, ...(own && { reference: { config: own } }) };
}

/**
 * The baseline: the reference configuration's time as the search measured it, else (outside the space) measured now as
 * every configuration is (on the GPU; a replay has only what its cache recorded); a separate reference kernel's own
 * time; undefined where nothing timed it.
 */
async function baselineOf(job: TuningJob, result: TuneResult, measure: Measure, signal: AbortSignal | undefined): Promise<{ timeMs: number; params: Config } | undefined> {
  const reference = result.reference;
  if (!reference) return undefined;
  if (job.spec.reference) return reference.timeMs === undefined ? undefined : { timeMs: reference.timeMs, params: reference.config };
  const names = Object.keys(job.tuneParams);
  const key = names.every((n) => reference.config[n] !== undefined) ? configKey(reference.config, names) : undefined;
  const searched = result.results.find((r) => r.key === key && r.status === 'ok' && r.timeMs !== undefined);
  if (searched) return { timeMs: searched.timeMs!, params: reference.config };
  if ('replay' in measure) return undefined;
  const options: TuneOptions = { ...job.options, backend: measure.backends, ...(signal && { signal }), earlyStop: false };
  const alone = await job.kernel.tune(job.test, Object.fromEntries(Object.entries(reference.config).map(([k, v]) => [k, [v]])), [], options);
  return alone.best?.timeMs === undefined ? undefined : { timeMs: alone.best.timeMs, params: reference.config };
}

/** The end: the file with `params` defined (unchanged where nothing was accepted), and the summary. */
async function* finished(job: TuningJob, o: TunerSessionOptions, params: Config, tracker: PerformanceTracker, tuneParams: Record<string, (number | string | boolean)[]>, propose: boolean): AsyncGenerator<TuningEvent, void> {
  const { spec } = job;
  const final = await finalizeKernel({
    code: o.code,
    kernelName: job.kernel.name,
    params,
    problemSize: Array.isArray(spec.problemSize) ? spec.problemSize : [spec.problemSize],
    gridDivisors: { ...(spec.gridDivX !== undefined && { x: spec.gridDivX }), ...(spec.gridDivY !== undefined && { y: spec.gridDivY }), ...(spec.gridDivZ !== undefined && { z: spec.gridDivZ }) },
    ...(spec.blockSizeNames && { blockSizeNames: spec.blockSizeNames }),
    ...(spec.sharedMemBytes !== undefined && { sharedMemBytes: spec.sharedMemBytes }),
  });
  if (propose) for (const message of final.warnings) yield makeEvent({ type: 'warning', message });
  const body: Extract<TuningEventBody, { type: 'session.finished' }> = {
    type: 'session.finished',
    finalCode: propose ? final.code : o.code,
    tunableCode: o.code,
    bestParams: params,
    tuneParams,
    restrictions: job.restrictions,
    tracker: trackerSummary(tracker),
    launch: final.launch,
    launchSites: propose ? final.launchSites : [],
  };
  yield makeEvent(body);
}
