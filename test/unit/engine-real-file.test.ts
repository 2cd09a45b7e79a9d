// An LLM session on a file as CUDA developers have it: host program, a local header, another kernel. The model reads
// the kernel's device unit (never main), its answer is spliced into the file, and the final proposal differs from the
// original only inside that unit and at the host's launch of the kernel. The model is a scripted server (real LangChain
// client over HTTP); the GPU is the FakeBackend test double, whose builds are real nvcc compiles of the whole file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { NvccCompiler } from '../../src/gpu';
import { unifiedDiff } from '../../src/engine/candidate/diff';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { collect, openaiModel, requestText, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import type { ScriptedLlmServer, ScriptTurn } from '../support/scripted-llm-server';

const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-real-file-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const HEADER = `#pragma once
// A lane's index in its warp (read-only context for the model).
__device__ __forceinline__ int lane_of(int i) { return i & 31; }
inline void check(int status) { if (status != 0) { throw status; } }
`;

const PROGRAM = `#include <cstdio>
#include "saxpy_helpers.h"

#define N_DEFAULT 1048576

// One multiply-add.
__device__ __forceinline__ float fused(float a, float x, float y) { return a * x + y; }

__global__ void saxpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && lane_of(i) >= 0) y[i] = fused(a, x[i], y[i]);
}

__global__ void unrelated(int *p) { p[0] = 1; }

int main() {
    int n = N_DEFAULT;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    saxpy<<<(n + 255) / 256, 256>>>(x, y, 2.0f, n);
    cudaDeviceSynchronize();
    std::printf("done\\n");
    return 0;
}
`;

const REWRITE = `#include <cstdio>
#include "saxpy_helpers.h"

// One multiply-add, fused.
__device__ __forceinline__ float fused(float a, float x, float y) { return fmaf(a, x, y); }

// The element of this thread.
__device__ __forceinline__ int element() { return blockIdx.x * block_size_x + threadIdx.x; }

// FAKE_BLOCK_AWARE
__global__ void __launch_bounds__(block_size_x) saxpy(const float *x, float *y, float a, int n) {
    int i = element();
    if (i < n && lane_of(i) >= 0) y[i] = fused(a, x[i], y[i]);
}
`;

const turns: ScriptTurn[] = [
  { comment: 'describe', match: { contains: 'Describe what the CUDA kernel `saxpy`' }, respond: { content: 'y = a * x + y over n floats, one element per thread.' } },
  { comment: 'problem size', match: { contains: 'Give its problem size' }, respond: { content: '{"problemSize": ["n"]}' } },
  { comment: 'outputs', match: { contains: 'Which of its arguments does it write' }, respond: { content: '{"outputs": ["y"]}' } },
  {
    comment: 'test spec',
    match: { contains: 'Design the inputs of a test' },
    respond: {
      content: JSON.stringify({
        arguments: [
          { name: 'x', value: null, length: 'n', init: 'uniform', min: -1, max: 1, mean: null, std: null, fill: null },
          { name: 'y', value: null, length: 'n', init: 'uniform', min: -1, max: 1, mean: null, std: null, fill: null },
          { name: 'a', value: 2.5, length: null, init: 'none', min: null, max: null, mean: null, std: null, fill: null },
          { name: 'n', value: 1048576, length: null, init: 'none', min: null, max: null, mean: null, std: null, fill: null },
        ],
      }),
    },
  },
  { comment: 'plan', match: { contains: 'Plan how to make this CUDA kernel faster' }, respond: { content: '{"steps": [{"title": "Tune the block size", "details": "Make block_size_x tunable."}]}' } },
  { comment: 'validate', match: { contains: 'Judge each one' }, respond: { content: '{"steps": [{"id": "1", "deviceOnly": true, "reason": "kernel only"}]}' } },
  {
    comment: 'the step: a rewrite of the unit with a new helper',
    match: { contains: 'Apply this optimization step to the CUDA kernel: Tune the block size' },
    respond: { content: `Here it is.\n\n\`\`\`cuda\n${REWRITE}\`\`\`\n\n\`\`\`json\n{"tunableParameters": {"block_size_x": [128, 256, 512]}}\n\`\`\`\n` },
  },
  { comment: 'restrictions', match: { contains: 'List the restrictions' }, respond: { content: '{"restrictions": []}' } },
  { comment: 'replan', match: { contains: 'Are there further optimization steps' }, respond: { content: '{"done": true, "steps": []}' } },
];

const nvccAvailable = await NvccCompiler.available();

describe('an LLM session on a whole program', () => {
  it('shows the model the device unit only, and proposes a file changed only there and at the launch', async () => {
    writeFileSync(path.join(scratch, 'saxpy_helpers.h'), HEADER);
    const filePath = path.join(scratch, 'saxpy_main.cu');
    writeFileSync(filePath, PROGRAM);
    server = await serve(turns);
    // With nvcc here, every build (the original, each configuration) is a real compile of the whole file.
    const backend = new FakeBackend({ model: { timeMs: saxpyTime }, ...(nvccAvailable && { compile: 'nvcc' as const }) });
    const run = await collect(
      new LLMKernelTransformer(PROGRAM, {
        llm: openaiModel(server),
        backend,
        kernelName: 'saxpy',
        filePath,
        tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1), withReplanning: true }),
      }),
    );
    expect(server.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });

    // Every request that shows the kernel shows its device unit, the header's helper marked read-only, and no host code.
    const shown = server.requests.map((r) => requestText(r.body as never)).filter((t) => t.includes('__global__ void saxpy'));
    expect(shown.length).toBeGreaterThanOrEqual(5);
    for (const text of shown) {
      expect(text).toContain('__device__ __forceinline__ float fused');
      expect(text).toMatch(/It uses this device code from saxpy_helpers\.h \(read-only[^\n]*\n```cuda\n\/\/ A lane's index[^\n]*\n__device__ __forceinline__ int lane_of/);
      expect(text).not.toMatch(/int main|cudaMalloc|printf\(|unrelated|inline void check/);
    }

    const finished = run.of('session.finished')[0]!;
    expect(finished.bestParams).toEqual({ block_size_x: 512 });
    const final = finished.finalCode;
    // The host code, the other kernel and the includes are byte for byte as they were; the launch follows the kernel.
    expect(final).toContain(PROGRAM.slice(PROGRAM.indexOf('__global__ void unrelated'), PROGRAM.indexOf('    saxpy<<<')));
    expect(final).toContain('    saxpy<<<(n + 511) / 512, 512>>>(x, y, 2.0f, n);\n    cudaDeviceSynchronize();');
    expect(finished.launchSites).toEqual([{ line: expect.any(Number), inFunction: 'main', before: '<<<(n + 255) / 256, 256>>>', after: '<<<(n + 511) / 512, 512>>>' }]);
    const diff = unifiedDiff(PROGRAM, final, { fileName: "saxpy_main.cu" });
    const changed = diff.split('\n').filter((l) => /^[-+][^-+]/.test(l));
    for (const line of changed) expect(line).not.toMatch(/int main|cudaMalloc|printf|unrelated|#include|N_DEFAULT/);
    expect(changed).toEqual(
      expect.arrayContaining([
        '-// One multiply-add.',
        '+// One multiply-add, fused.',
        '+#ifndef block_size_x',
        '+#define block_size_x 512',
        '+__device__ __forceinline__ int element() { return blockIdx.x * block_size_x + threadIdx.x; }',
        '-    saxpy<<<(n + 255) / 256, 256>>>(x, y, 2.0f, n);',
        '+    saxpy<<<(n + 511) / 512, 512>>>(x, y, 2.0f, n);',
      ]),
    );
    // The builds compiled the whole program (host code and header included), not a kernel cut out of it.
    const builds = backend.log.filter((e) => e.kind === 'compile');
    expect(builds.every((b) => b.source.includes('int main()'))).toBe(true);
  });
});
