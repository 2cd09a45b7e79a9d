// Which GPUs one search runs on, one GPU worker each: `all`, a list of ordinals (`0,2`), or a count `N` (the first N,
// as Docker's --gpus counts them). Only GPUs of one model tune one search: their timings compare with each other, and a
// kernel compiled once loads on all of them. Plain data and checks (the extension reads its setting with these);
// GpuBackend.openAll opens the workers.

export type GpuSelection = { kind: 'all' } | { kind: 'count'; count: number } | { kind: 'list'; ordinals: number[] };

/** A GPU as the selection needs it: its ordinal and its model's name. */
export interface GpuModel {
  ordinal: number;
  name: string;
}

export class GpuSelectionError extends Error {
  override readonly name = 'GpuSelectionError';
}

/** GPUs of different models were chosen for one search; the message names the models and which GPUs are which. */
export class MixedGpuModelsError extends GpuSelectionError {
  constructor(readonly groups: { name: string; ordinals: number[] }[]) {
    const which = groups.map((g) => `${g.ordinals.length > 1 ? 'GPUs' : 'GPU'} ${g.ordinals.join(', ')} ${g.ordinals.length > 1 ? 'are' : 'is'} ${g.name}`);
    const choices = groups.map((g) => `${g.ordinals.join(',')} (${g.name})`);
    super(
      `${which.join('; ')}: one search runs on GPUs of one model, because timings compare only on the same model. ` +
        `Choose GPUs of one model: ${choices.join(' or ')}.`,
    );
  }
}

/** One GPU: the default when nothing is chosen. */
export function singleGpu(ordinal = 0): GpuSelection {
  return { kind: 'list', ordinals: [ordinal] };
}

/** Parses `all`, `0,2` (ordinals) or `N` (the first N GPUs); `source` names the flag or setting in errors. */
export function parseGpuSelection(text: string, source = '--gpus'): GpuSelection {
  const t = text.trim().toLowerCase();
  if (t === 'all') return { kind: 'all' };
  const usage = `${source} takes all, a list of GPU ordinals such as 0,2, or a number N of GPUs (the first N); received '${text}'`;
  if (/^\d+$/.test(t)) {
    const count = Number(t);
    if (count < 1) throw new GpuSelectionError(`${usage}: at least one GPU`);
    return { kind: 'count', count };
  }
  if (!/^\d+(\s*,\s*\d+)+$/.test(t)) throw new GpuSelectionError(usage);
  const ordinals = t.split(',').map((x) => Number(x.trim()));
  const twice = ordinals.find((o, i) => ordinals.indexOf(o) !== i);
  if (twice !== undefined) throw new GpuSelectionError(`${source} lists GPU ${twice} twice: one worker per GPU`);
  return { kind: 'list', ordinals };
}

/** The ordinals a selection stands for on a host with these GPUs, checked to exist and to be of one model. */
export function resolveGpuSelection(selection: GpuSelection, devices: readonly GpuModel[]): number[] {
  const available = devices.map((d) => d.ordinal);
  const have = `this host has ${available.length} GPU${available.length === 1 ? '' : 's'}${available.length ? ` (ordinals ${available.join(', ')})` : ''}`;
  let ordinals: number[];
  if (selection.kind === 'all') ordinals = available;
  else if (selection.kind === 'count') {
    if (selection.count > available.length) throw new GpuSelectionError(`${selection.count} GPUs were asked for, but ${have}`);
    ordinals = available.slice(0, selection.count);
  } else {
    const missing = selection.ordinals.filter((o) => !available.includes(o));
    if (missing.length > 0) throw new GpuSelectionError(`there is no GPU ${missing.join(', ')}: ${have}`);
    ordinals = selection.ordinals;
  }
  if (ordinals.length === 0) throw new GpuSelectionError(`no GPU to tune on: ${have}`);
  checkOneModel(ordinals.map((o) => devices.find((d) => d.ordinal === o)!));
  return ordinals;
}

/** Throws MixedGpuModelsError unless every GPU is of the same model. */
export function checkOneModel(devices: readonly GpuModel[]): void {
  const groups: { name: string; ordinals: number[] }[] = [];
  for (const d of devices) {
    const group = groups.find((g) => g.name === d.name);
    if (group) group.ordinals.push(d.ordinal);
    else groups.push({ name: d.name, ordinals: [d.ordinal] });
  }
  if (groups.length > 1) throw new MixedGpuModelsError(groups);
}
