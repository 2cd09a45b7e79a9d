// Whether this machine can run the GPU tests and benchmarks: the addon loads, libcuda is there and it sees a device.
import { loadNativeAddon } from '../../src/gpu/native';

/** Why GPU work cannot run here, or false when it can. Never throws: a missing addon is a reason too. */
export function gpuSkipReason(): string | false {
  try {
    const addon = loadNativeAddon();
    const status = addon.status();
    if (!status.cuda.loaded) return `libcuda is not loaded (${status.cuda.error ?? 'unknown reason'})`;
    if (addon.deviceCount() === 0) return 'no CUDA device';
    return false;
  } catch (e) {
    return `the native addon cannot be loaded: ${e instanceof Error ? e.message : String(e)}`;
  }
}
