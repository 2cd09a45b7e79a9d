/**
 * The device's memory bandwidth, measured: a copy kernel over two buffers far larger than L2, against the driver's own
 * device-to-device copy (cuMemcpyDtoD) of the same buffers. The kernel moves 16 bytes per load and store (uint4), keeps
 * `unroll` independent loads in flight per thread before storing them, and walks the buffer with a grid stride; the
 * best of a few launch shapes is the bandwidth limit the reports use, and it must reach at least 90 % of the driver's
 * copy (the GPU test checks it). Bandwidth counts bytes read plus bytes written: a copy of B bytes moves 2B.
 */
import { uint64, type Gpu } from './client';
import type { TimingStats } from './stats';
import type { Compiler } from './types';

export const COPY_KERNEL_SOURCE = String.raw`
template <int unroll>
__global__ void copy_vectors(uint4 *__restrict__ dst, const uint4 *__restrict__ src, unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    // All loads of a round are issued before the first store: unroll x 16 bytes in flight per thread.
    for (; i + (unroll - 1) * stride < n; i += unroll * stride) {
        uint4 v[unroll];
#pragma unroll
        for (int k = 0; k < unroll; k++) v[k] = src[i + k * stride];
#pragma unroll
        for (int k = 0; k < unroll; k++) dst[i + k * stride] = v[k];
    }
    for (; i < n; i += stride) dst[i] = src[i];
}
`;

/** The copy kernel's launch shapes tried: vectors in flight per thread, threads per block, blocks per multiprocessor. */
export const COPY_SHAPES = {
  unroll: [1, 2, 4, 8],
  block: [256, 512, 1024],
  blocksPerSm: [2, 4, 8, 16, 32],
} as const;

export interface CopyShape {
  unroll: number;
  block: number;
  grid: number;
}

export interface BandwidthMeasurement {
  /** Bytes of each of the two buffers. */
  bufferBytes: number;
  /** The best copy kernel shape and its GB/s (2 x bufferBytes / median time). */
  kernel: CopyShape & { medianMs: number; GBps: number };
  /** cuMemcpyDtoD of the same buffers. */
  memcpy: { medianMs: number; GBps: number };
  /** kernel.GBps / memcpy.GBps. */
  ratio: number;
  /** Every shape tried, for the benchmark's table. */
  shapes: (CopyShape & { medianMs: number; GBps: number })[];
}

export interface BandwidthOptions {
  /** Bytes of each buffer; default 8 x L2 and at least 512 MiB, within a quarter of the free memory. */
  bufferBytes?: number;
  iterations?: number;
  warmup?: number;
  /** The compiler of the copy kernel; default the worker's NVRTC. */
  compiler?: Compiler;
}

const MiB = 1 << 20;

/** Buffers much larger than L2 so that the copy measures device memory, and small enough to leave room for the rest. */
export function probeBufferBytes(l2CacheBytes: number, freeBytes: number): number {
  const wanted = Math.max(512 * MiB, 8 * l2CacheBytes);
  const fits = Math.floor(freeBytes / 4 / MiB) * MiB;
  return Math.max(16 * MiB, Math.min(wanted, fits));
}

const gbps = (bytesMoved: number, stats: TimingStats) => bytesMoved / (stats.medianMs * 1e-3) / 1e9;

/**
 * Measures on `gpu`: the driver's copy and every copy kernel shape (the buffers are random data; the result of the
 * copy is not checked here, the GPU test checks the kernel copies every byte). Frees what it allocated.
 */
export async function measureBandwidth(gpu: Gpu, options: BandwidthOptions = {}): Promise<BandwidthMeasurement> {
  const iterations = options.iterations ?? 20;
  const warmup = options.warmup ?? 2;
  const bufferBytes = options.bufferBytes ?? probeBufferBytes(gpu.device.l2CacheBytes, (await gpu.memInfo()).freeBytes);
  if (bufferBytes % 16 !== 0) throw new RangeError(`bufferBytes must be a multiple of 16 (one uint4), got ${bufferBytes}`);
  const vectors = bufferBytes / 16;
  const names = COPY_SHAPES.unroll.map((u) => `copy_vectors<${u}>`);
  const init = { source: COPY_KERNEL_SOURCE, fileName: 'bandwidth_probe.cu', nameExpressions: names };
  const program = await (options.compiler ? options.compiler.compile({ ...init, arch: gpu.arch }) : gpu.compile(init));
  const module = await gpu.loadModule(program);
  const source = await gpu.alloc('uint32', bufferBytes / 4);
  const destination = await gpu.alloc('uint32', bufferBytes / 4);
  try {
    await source.fillRandom({ distribution: 'integers', min: 0, max: 0xffff, seed: 7 });
    const memcpyStats = await gpu.benchmarkCopy(destination, source, { warmup, iterations });
    const memcpy = { medianMs: memcpyStats.medianMs, GBps: gbps(2 * bufferBytes, memcpyStats) };
    const shapes: BandwidthMeasurement['shapes'] = [];
    for (const [i, unroll] of COPY_SHAPES.unroll.entries()) {
      const kernel = await module.getKernel(names[i]!);
      for (const block of COPY_SHAPES.block) {
        if (block > kernel.attributes.maxThreadsPerBlock) continue;
        for (const perSm of COPY_SHAPES.blocksPerSm) {
          const grid = Math.min(gpu.device.multiprocessors * perSm, Math.ceil(vectors / block));
          const stats = await gpu.benchmark(kernel, { grid, block }, [destination, source, uint64(vectors)], { warmup, iterations });
          shapes.push({ unroll, block, grid, medianMs: stats.medianMs, GBps: gbps(2 * bufferBytes, stats) });
        }
      }
    }
    const best = shapes.reduce((a, b) => (b.GBps > a.GBps ? b : a));
    return { bufferBytes, kernel: best, memcpy, ratio: best.GBps / memcpy.GBps, shapes };
  } finally {
    await Promise.all([source.free(), destination.free(), module.unload()]);
  }
}
