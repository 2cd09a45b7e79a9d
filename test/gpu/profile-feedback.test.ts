// Profiler feedback on the real device (node --test dist-gpu/gpu-tests/profile-feedback.test.js):
//  - examples/matmul_naive tuned at n = 4096 (three 64 MiB matrices: past the L2 of every GPU we run on, unlike the
//    example's 2048, whose 48 MiB fit an H100's 50 MiB L2), its best configuration profiled after the search: Nsight
//    Compute calls it memory-bound where ncu runs and may read the counters (else the driver's metrics, with why);
//  - the expert session (examples/matmul_naive/expert-session.json) replayed on this GPU: every step's request carries
//    this GPU's measurements and the profile of the kernel before it.
// Skipped, with the reason, without a driver or device. With OUT set, the profile and the prompts' measured parts go to
// $OUT/profile-feedback.json.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GPU_HEADING, measuredLines, PROFILE_HEADING } from '../../src/engine/prompts';
import type { EventOf } from '../../src/engine/progress/events';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { loadTuningSpec, tuningJob } from '../../src/tuner/spec/tuning-spec';
import type { TuneResult } from '../../src/tuner/types';
import { replayExpertSession } from '../support/expert-session';
import { gpuSkipReason } from '../support/gpu-available';

const skip = gpuSkipReason();
if (skip) console.log(`# profile feedback tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip }, fn);
};

const root = path.resolve(__dirname, '..', '..');
const written: Record<string, unknown> = {};

describe('profiler feedback on the device', () => {
  let backend: GpuBackend;
  before(async () => {
    if (!skip) backend = await GpuBackend.open();
  });
  after(async () => {
    await backend?.dispose();
    if (process.env.OUT && Object.keys(written).length > 0) writeFileSync(path.join(process.env.OUT, 'profile-feedback.json'), JSON.stringify(written, null, 2));
  });

  test("matmul_naive's best configuration at n = 4096 is profiled after the search: memory-bound", async () => {
    const spec = loadTuningSpec(path.join(root, 'examples', 'matmul_naive', 'tune.yaml'));
    const n = 4096;
    const job = await tuningJob({ ...spec, arguments: { ...spec.arguments, n: { dtype: 'int32', value: n } }, iterations: 7 });
    const l2 = (await backend.describe()).l2CacheBytes;
    assert.ok(3 * n * n * 4 > 2 * l2, `three ${n}² matrices (${(3 * n * n * 4) / 2 ** 20} MiB) should not fit the L2 (${l2 / 2 ** 20} MiB)`);
    const result: TuneResult = await job.kernel.tune(job.test, job.tuneParams, job.restrictions, { ...job.options, backend, profile: { timeoutMs: 180_000 } });
    assert.equal(result.profileError, undefined);
    const best = result.best!;
    const p = result.profile!;
    written.matmulNaive = { best: { config: best.config, timeMs: best.timeMs }, profile: p };
    console.log(`# matmul_naive n=${n}: best ${JSON.stringify(best.config)} ${best.timeMs!.toFixed(3)} ms; profile (${p.source}${p.unavailable ? `: ${p.unavailable.reason}` : ''}):\n${p.summary.map((l) => `#   ${l}`).join('\n')}`);
    assert.deepEqual(p.config, best.config);
    // The driver's metrics are always there: this kernel's registers, no spills, its occupancy at the best block.
    assert.equal(p.driver.num_regs, best.driver!.num_regs);
    assert.equal(p.driver.local_mem_bytes, 0);
    assert.equal(p.driver.occupancy_source, 'driver');
    assert.ok(p.driver.occupancy > 0 && p.driver.occupancy <= 1, JSON.stringify(p.driver));
    if (p.source === 'driver') {
      // No Nsight Compute here, or counters refused: the driver's metrics stand in, and the profile says why.
      assert.ok(p.unavailable && ['ncu-not-found', 'counters-not-permitted'].includes(p.unavailable.reason), JSON.stringify(p.unavailable));
      assert.match(p.summary[0]!, /^matmul_naive: \d+ registers per thread, no local memory/);
      return;
    }
    const numbers = p.ncu!.numbers;
    console.log(`#   DRAM ${numbers.dramThroughputPct}%, L1/TEX ${numbers.l1texThroughputPct}%, L2 ${numbers.l2ThroughputPct}%, SM ${numbers.smThroughputPct}%`);
    assert.equal(numbers.bound, 'memory', JSON.stringify(numbers));
    assert.match(p.summary[0]!, /^matmul_naive: memory-bound/);
    assert.ok(numbers.dramThroughputPct !== undefined && numbers.smThroughputPct !== undefined && numbers.topStalls.length > 0, JSON.stringify(numbers));
    assert.equal(numbers.registersPerThread, p.driver.num_regs);
  });

  test('the expert session replayed here asks every step with this GPU and the profile of the kernel before it', async () => {
    const { events, end, replay } = await replayExpertSession(root, backend, 'profile-feedback', { iterations: 8 });
    const failed = events.find((e): e is EventOf<'session.failed'> => e.type === 'session.failed');
    assert.deepEqual(end, { status: 'finished' }, failed?.error.message);
    assert.deepEqual(replay.unused(), []);
    const device = (await backend.describe()).name;
    const profiles = events.filter((e): e is EventOf<'profile'> => e.type === 'profile');
    const accepted = events.filter((e): e is EventOf<'step.accepted'> => e.type === 'step.accepted');
    assert.deepEqual(accepted.map((e) => e.stepId), ['1', '2', '3', '4']);
    const asked = events.flatMap((e) => (e.type === 'llm.exchange' && /^step \d$/.test(e.exchange.purpose) ? [{ purpose: e.exchange.purpose, text: e.exchange.messages.at(-1)!.content as string }] : []));
    assert.equal(asked.length, 4);
    written.expertReplay = { profiles: profiles.map((e) => ({ step: e.stepId ?? 'original', ...e.profile })), requests: asked.map((a) => ({ purpose: a.purpose, measured: measuredLines(a.text) })) };
    for (const [i, a] of asked.entries()) {
      const lines = measuredLines(a.text);
      console.log(`# ${a.purpose}:\n${lines.map((l) => `#   ${l}`).join('\n')}`);
      assert.ok(lines[0] === `${GPU_HEADING}:` && lines[1]!.startsWith(`- ${device}:`), lines.join('\n'));
      assert.match(a.text, /- the current kernel takes [\d.]+ [mµ]?s on the first test, [\d.]+% of its speed of light/);
      // Step 1 is told the original kernel's profile, each later one the profile of the step before it.
      const before = i === 0 ? profiles.find((p) => p.stepId === undefined)! : profiles.find((p) => p.stepId === accepted[i - 1]!.stepId)!;
      assert.ok(a.text.includes(`${PROFILE_HEADING} ${JSON.stringify(before.profile.config)}`), `${a.purpose} carries the profile of ${JSON.stringify(before.profile.config)}`);
      for (const line of before.profile.summary) assert.ok(a.text.includes(`- ${line}`), `${a.purpose}: ${line}`);
    }
  });
});
