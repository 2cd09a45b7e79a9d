// The GPU machines must be left exactly as they are: NVML is used read only. No NVML function that sets, resets or
// clears anything (clocks, application clocks, power limits, persistence mode ...) may appear in the addon's source or
// be resolved by the built addon, and no code of the GPU layer may name one.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeAddonPath } from '../../src/gpu/native';

const ROOT = path.resolve(__dirname, '../..');
/** nvmlDeviceSetApplicationsClocks, nvmlDeviceResetGpuLockedClocks, nvmlDeviceClearAccountingPids, nvmlUnitSetLedState ... */
const NVML_WRITER = /nvml[A-Za-z]*?(Set|Reset|Clear)[A-Z][A-Za-z_]*/g;

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(full) : [full];
  });
}

describe('NVML is used read only', () => {
  const sources = [...filesUnder(path.join(ROOT, 'native')), ...filesUnder(path.join(ROOT, 'src', 'gpu'))];

  it('reads every source of the addon and the GPU layer', () => {
    expect(sources.map((f) => path.relative(ROOT, f))).toEqual(expect.arrayContaining(['native/src/nvml.cc', 'native/src/nvml_api.h', 'src/gpu/energy.ts']));
  });

  it('no source names an NVML setter, reset or clear', () => {
    const found = sources.flatMap((f) => [...fs.readFileSync(f, 'utf8').matchAll(NVML_WRITER)].map((m) => `${path.relative(ROOT, f)}: ${m[0]}`));
    expect(found).toEqual([]);
  });

  it('the built addon resolves NVML getters and no writer', () => {
    const binary = fs.readFileSync(nativeAddonPath()).toString('latin1');
    expect(binary).toContain('nvmlDeviceGetTotalEnergyConsumption');
    expect(binary.match(NVML_WRITER)).toBeNull();
  });

  it('the pattern catches the writers it is meant to catch', () => {
    for (const name of ['nvmlDeviceSetApplicationsClocks', 'nvmlDeviceSetPowerManagementLimit', 'nvmlDeviceResetGpuLockedClocks', 'nvmlDeviceSetGpuLockedClocks', 'nvmlDeviceClearCpuAffinity'])
      expect(name.match(NVML_WRITER)).toEqual([name]);
    expect('nvmlDeviceGetEnforcedPowerLimit nvmlDeviceGetClockInfo'.match(NVML_WRITER)).toBeNull();
  });
});
