// The GPUs a multi-GPU test or benchmark runs on: every GPU of the first GPU's model (all of them on a host of one
// model), one GpuBackend (worker process) each.
import { GpuBackend } from '../../src/tuner/run/gpu-backend';

export async function openGpusOfFirstModel(): Promise<GpuBackend[]> {
  const first = await GpuBackend.open({ device: 0 });
  const devices = await first.gpu.devices();
  await first.dispose();
  return GpuBackend.openAll({ kind: 'list', ordinals: devices.filter((d) => d.name === devices[0]!.name).map((d) => d.ordinal) });
}
