/**
 * A candidate's best configuration run once under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) before
 * it is accepted: output checks cannot see a race that happens to give the right answer on this GPU today, a read one
 * element past a buffer's end inside its allocation, or a read of memory never written. It runs on the smallest of the
 * session's tests made small (TunableKernel.sanitize), compiled with line information, so that a finding names the
 * candidate file's lines and quotes them; the original kernel vouches for a reduced problem. It is slow (the tools
 * slow a launch down many times), so only a candidate that would be accepted is checked: see BaseTuningStrategy.
 */
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { TunableKernel } from '../../tuner/tunable-kernel';
import type { SanitizerVerdict } from '../../tuner/run/sanitizer';
import type { Config } from '../../tuner/types';
import { engineContext } from '../context';
import { emit } from '../progress/events';
import type { TuningStateValue } from '../state';
import { fileInfo } from './kernel-view';
import { candidateRunOptions, kernelTestOf, type CandidateKernel } from './run-tests';
import type { GpuShare } from '../resources/gpu-pool';

/**
 * compute-sanitizer's verdict on `candidate` at `bestParams`, announced as a `sanitized` event: clean, hazards with
 * the first findings (at the candidate file's lines), unavailable with the reason (no compute-sanitizer, it could not
 * run the launch), or timed out. GPU work runs alone on the GPUs of `share` (EngineContext.onGpus). Only an abort rejects.
 */
export async function sanitizeCandidate(
  candidate: CandidateKernel,
  bestParams: Config,
  state: TuningStateValue,
  config: LangGraphRunnableConfig,
  progress: { stepId: string; candidate: number },
  share: GpuShare = 'all',
): Promise<SanitizerVerdict> {
  const ctx = engineContext(config);
  const kernel = await TunableKernel.create(candidate.code, fileInfo(state));
  const tests = state.tests.map((ref) => kernelTestOf(ref, ctx));
  const verdict = await ctx.onGpus(share, (backends) => kernel.sanitize(tests, bestParams, candidateRunOptions(candidate, state, ctx, config, backends)));
  config.signal?.throwIfAborted();
  emit(config, { type: 'sanitized', ...progress, verdict });
  return verdict;
}
