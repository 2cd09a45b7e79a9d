// llm-kernel-tuner probe: the GPU path end to end on a kernel we know. A vector add is compiled with NVRTC for a few
// block sizes, each is verified against the reference on two input sets and timed with CUDA events. If this passes,
// the driver, NVRTC, the worker and the tuner all work on this machine.
import { parseArgs } from 'node:util';
import { KernelTest, TunableKernel } from '../tuner/tunable-kernel';
import { ms, table } from './format';

const VECTOR_ADD = `
#ifndef block_size_x
#define block_size_x 256
#endif
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
`;

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      size: { type: 'string', default: String(2 ** 24) },
      iterations: { type: 'string', default: '32' },
      device: { type: 'string', default: '0' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: llm-kernel-tuner probe [--size N] [--iterations N] [--device N] [--json]\n\n' +
        'Compiles a vector add for block sizes 64..1024, checks every one against the reference and times it.\n',
    );
    return 0;
  }
  const n = positiveInteger('--size', values.size!);
  const kernel = await TunableKernel.create(VECTOR_ADD, { fileName: 'vector_add.cu' });
  const test = KernelTest.fromSpec({
    problemSize: 'n',
    arguments: {
      c: { dtype: 'float32', length: 'n', output: true },
      a: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
      b: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
      n: { dtype: 'int32', value: n },
    },
  });
  const started = performance.now();
  const result = await kernel.tune(test, { block_size_x: [64, 128, 256, 512, 1024] }, [], {
    device: positiveInteger('--device', values.device!, 0),
    iterations: positiveInteger('--iterations', values.iterations!),
    earlyStop: false,
  });
  const wallMs = performance.now() - started;
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ wallMs, ...result }, null, 2)}\n`);
  } else {
    const gbs = (t: number | undefined) => (t ? ((3 * 4 * n) / (t * 1e-3) / 1e9).toFixed(0) : '');
    process.stdout.write(
      table(
        ['block_size_x', 'status', 'median ms', 'min ms', 'max ms', 'GB/s', 'registers', 'occupancy'],
        result.results.map((r) => [
          String(r.config.block_size_x),
          r.status,
          ms(r.stats?.medianMs),
          ms(r.stats?.minMs),
          ms(r.stats?.maxMs),
          gbs(r.timeMs),
          String(r.driver?.num_regs ?? ''),
          r.driver?.occupancy === undefined ? '' : `${Math.round(100 * r.driver.occupancy)}%`,
        ]),
      ),
    );
    const best = result.best;
    process.stdout.write(best ? `\nbest: block_size_x=${best.config.block_size_x} at ${ms(best.timeMs)} ms; all in ${(wallMs / 1000).toFixed(2)} s\n` : '\nno configuration succeeded\n');
    for (const r of result.results) if (r.error) process.stdout.write(`block_size_x=${r.config.block_size_x}: ${r.error.message}\n`);
  }
  return result.best && result.results.every((r) => r.status === 'ok') ? 0 : 1;
}

function positiveInteger(flag: string, text: string, min = 1): number {
  const v = Number(text);
  if (!Number.isSafeInteger(v) || v < min) throw new Error(`${flag} must be an integer >= ${min}, received '${text}'`);
  return v;
}
