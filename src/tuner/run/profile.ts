// What a profile of one configuration says: Nsight Compute's few lines where it could profile a launch (after the
// timings, in a process of its own: gpu/ncu/profile.ts), else the driver's metrics (registers, spills, shared memory,
// theoretical occupancy), which are free, with the reason Nsight Compute did not answer. Plain data: it goes into the
// LLM's prompts, the event stream, the panel and the report (no GPU client here: the extension's light bundle reads it).
import type { KernelProfile, ProfileUnavailable } from '../../gpu/ncu/profile';
import type { ProfileNumbers } from '../../gpu/ncu/report';
import type { KernelMetrics } from '../../gpu/kernel-metrics';
import type { Occupancy, OccupancyLimit } from '../../gpu/occupancy';
import type { Config } from '../types';
import type { Launch } from './backend';

/** The driver's free metrics of a configuration, with what limits its occupancy. */
export interface DriverMetrics extends KernelMetrics {
  limitedBy?: OccupancyLimit[];
}

/** What a backend measures of one launch: the driver's metrics, always, and Nsight Compute's profile or why there is none. */
export interface ProfiledLaunch {
  driver: DriverMetrics;
  ncu: KernelProfile;
}

export interface ConfigProfile {
  config: Config;
  /** 'ncu': Nsight Compute profiled one launch; 'driver': the driver's metrics stand in (`unavailable` says why). */
  source: 'ncu' | 'driver';
  /** A few lines for a prompt, the panel and the report. */
  summary: string[];
  driver: DriverMetrics;
  ncu?: { numbers: ProfileNumbers; version?: string };
  /** Why there is no Nsight Compute profile. */
  unavailable?: { reason: ProfileUnavailable; message: string };
}

const KIB = 1024;
const bytes = (n: number): string => (n >= KIB && n % KIB === 0 ? `${n / KIB} KiB` : `${n} B`);

/** The driver's metrics in a few lines: what the kernel uses per thread and block, and how full an SM gets. */
export function driverSummary(kernelName: string, m: DriverMetrics, launch: Launch): string[] {
  const threads = launch.block[0] * launch.block[1] * launch.block[2];
  const local = m.local_mem_bytes === 0 ? 'no local memory (no spills)' : `${bytes(m.local_mem_bytes)} of local memory per thread (spills or local arrays)`;
  const limits = m.limitedBy && m.limitedBy.length > 0 ? `, limited by ${m.limitedBy.join(' and ')}` : '';
  return [
    `${kernelName}: ${m.num_regs} registers per thread, ${local}`,
    `shared memory per block: ${bytes(m.static_shared_mem_bytes)} static, ${bytes(m.dynamic_shared_mem_bytes)} dynamic`,
    `theoretical occupancy ${Math.round(100 * m.occupancy)}%: ${m.active_blocks_per_sm} blocks of ${threads} threads (${m.active_warps_per_sm} warps) per SM${limits}`,
  ];
}

/** Kernel.metrics' numbers with the limits of its occupancy. */
export function driverMetrics(metrics: KernelMetrics, occupancy: Pick<Occupancy, 'limitedBy'>): DriverMetrics {
  return { ...metrics, ...(occupancy.limitedBy && { limitedBy: occupancy.limitedBy }) };
}

/** The profile of a configuration: Nsight Compute's where it answered, else the driver's metrics and why. */
export function configProfile(config: Config, kernelName: string, launch: Launch, { driver, ncu }: ProfiledLaunch): ConfigProfile {
  if (ncu.available) {
    return { config, source: 'ncu', summary: ncu.summary, driver, ncu: { numbers: ncu.numbers, ...(ncu.ncu.version && { version: ncu.ncu.version }) } };
  }
  return { config, source: 'driver', summary: driverSummary(kernelName, driver, launch), driver, unavailable: { reason: ncu.reason, message: ncu.message } };
}

/** Where a profile's lines come from, in words (the panel's and the prompts' heading). */
export function profileSourceText(profile: Pick<ConfigProfile, 'source' | 'unavailable' | 'ncu'>): string {
  if (profile.source === 'ncu') return `Nsight Compute${profile.ncu?.version ? ` ${profile.ncu.version}` : ''}, one launch`;
  const why: Record<ProfileUnavailable, string> = {
    'ncu-not-found': 'Nsight Compute is not installed',
    'counters-not-permitted': 'the driver does not allow reading the performance counters',
    timeout: 'Nsight Compute ran out of time',
    'launch-failed': 'the profiled launch failed',
    failed: 'Nsight Compute failed',
  };
  return `the driver's metrics: ${profile.unavailable ? why[profile.unavailable.reason] : 'no profiler'}`;
}
