/**
 * The session's file as the model sees it and as the tuner compiles it. The state holds whole files (the original,
 * the best so far); the model reads the kernel's device unit (src/tuner/source/device-unit.ts) and its answer is
 * spliced back into the file, so host code, other kernels, comments and includes stay byte for byte as they were.
 */
import { readFileSync } from 'node:fs';
import { deviceUnitOf, spliceDeviceUnit, type DeviceUnit } from '../../tuner/source/device-unit';
import type { TunableKernelInfo } from '../../tuner/tunable-kernel';
import type { KernelView } from '../prompts';
import type { TuningStateValue } from '../state';

/** What locates the session's kernel and its file: enough to find its device unit and headers. */
export type FileState = Pick<TuningStateValue, 'kernelName' | 'fileName' | 'filePath' | 'includePaths'>;

export function fileStateOf(state: FileState): FileState {
  return { kernelName: state.kernelName, fileName: state.fileName, filePath: state.filePath ?? null, includePaths: state.includePaths ?? [] };
}

function readHeader(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

const units = new Map<string, Promise<DeviceUnit>>();

/** The device unit of the session's kernel in `code` (memoised: every prompt of a step shows the same one). */
export function unitOf(state: FileState, code: string): Promise<DeviceUnit> {
  const key = JSON.stringify([state.kernelName, state.filePath, state.includePaths, code]);
  let unit = units.get(key);
  if (!unit) {
    unit = deviceUnitOf(code, state.kernelName, {
      ...(state.filePath && { filePath: state.filePath }),
      includePaths: state.includePaths ?? [],
      readFile: readHeader,
    });
    unit.catch(() => units.delete(key));
    if (units.size > 64) units.delete(units.keys().next().value!);
    units.set(key, unit);
  }
  return unit;
}

/** What a prompt shows of `code`: the device unit, and the header code it uses. */
export async function kernelView(state: FileState, code: string): Promise<KernelView> {
  const unit = await unitOf(state, code);
  return { code: unit.text, context: unit.headerContext.map((h) => ({ file: h.file, text: h.text })) };
}

/** The file `code` with the model's rewrite of its device unit in place (SpliceError when it changes host code). */
export async function spliceAnswer(state: FileState, code: string, answer: string): Promise<string> {
  return spliceDeviceUnit(code, await unitOf(state, code), answer);
}

/** How the tuner opens the session's file: its name, path and include paths, for its #includes and its logs. */
export function fileInfo(state: FileState): TunableKernelInfo {
  return {
    kernelName: state.kernelName,
    fileName: state.fileName,
    ...(state.filePath && { filePath: state.filePath }),
    includePaths: state.includePaths ?? [],
  };
}
