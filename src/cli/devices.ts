// llm-kernel-tuner devices: the GPU inventory, read through the worker (so a broken driver cannot take the CLI down).
import { parseArgs } from 'node:util';
import { Gpu } from '../gpu/client';
import { formatBytes } from '../tuner/spec/units';
import { table } from './format';

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    process.stdout.write('usage: llm-kernel-tuner devices [--json]\n\nLists every CUDA device with its limits, and the driver and NVRTC versions.\n');
    return 0;
  }
  const gpu = await Gpu.open();
  try {
    const [devices, runtime] = await Promise.all([gpu.devices(), gpu.runtime()]);
    const driver = `${Math.floor(runtime.driverVersion / 1000)}.${(runtime.driverVersion % 1000) / 10}`;
    const nvrtc = runtime.nvrtcVersion ? runtime.nvrtcVersion.join('.') : `not loaded (${gpu.nativeStatus.nvrtc.error ?? 'unknown reason'}); nvcc is used instead`;
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ driverVersion: runtime.driverVersion, nvrtcVersion: runtime.nvrtcVersion, devices }, null, 2)}\n`);
      return 0;
    }
    process.stdout.write(`CUDA driver ${driver}, NVRTC ${nvrtc}\n\n`);
    process.stdout.write(
      table(
        ['#', 'name', 'cc', 'SMs', 'memory', 'L2', 'threads/block', 'shared/block (opt-in)', 'SM clock', 'memory clock', 'bus'],
        devices.map((d) => [
          String(d.ordinal),
          d.name,
          `${d.computeCapability[0]}.${d.computeCapability[1]}`,
          String(d.multiprocessors),
          formatBytes(d.globalMemoryBytes),
          formatBytes(d.l2CacheBytes),
          String(d.maxThreadsPerBlock),
          `${formatBytes(d.maxSharedMemoryPerBlock)} (${formatBytes(d.maxSharedMemoryPerBlockOptin)})`,
          d.clockRateKHz ? `${(d.clockRateKHz / 1000).toFixed(0)} MHz` : 'n/a',
          d.memoryClockRateKHz ? `${(d.memoryClockRateKHz / 1000).toFixed(0)} MHz` : 'n/a',
          `${d.memoryBusWidthBits}-bit`,
        ]),
      ),
    );
    return 0;
  } finally {
    await gpu.dispose();
  }
}
