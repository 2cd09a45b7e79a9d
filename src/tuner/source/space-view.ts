/**
 * A kernel file as the configurations of a tuning space compile it. The tuner defines every tunable parameter, the
 * block size names, grid_size_x/y/z and kernel_tuner, plus the compile's own -D options, and nothing else: the
 * preprocessor's closed world (preprocessor.ts). A parameter with one value is known; one tuned over several values
 * varies, and what its conditionals choose is left open in the space's view.
 *
 * A kernel is found in the space's view. Where a conditional outside the function bodies depends on a varying
 * parameter (it could change declarations), the kernel must keep its signature in every configuration: each
 * combination of those parameters' values (each value of one at a time, the others at their first, where the
 * combinations are too many) is preprocessed, and a declaration that reads differently is parsed and compared.
 */
import { sameSignature, findKernel, type KernelSignature } from './kernel-signature';
import { kernelsOf, kernelsOfFile } from './kernel-parser';
import { preprocess, type ConditionalGroup, type Preprocessed, type PreprocessOptions } from './preprocessor';
import { DEFAULT_BLOCK_X, defineValue, resolveBlockSizeNames } from '../space/geometry';
import type { Config, ParamValue, TuneParams } from '../types';

/** What reading a kernel file needs besides its text. */
export interface SourceContext {
  /** The file's absolute path: its folder is searched for quoted #includes. */
  filePath?: string;
  includePaths?: readonly string[];
  readFile?: (absolutePath: string) => string | undefined;
  /** The compile's -D options (a spec's compilerOptions, the project's compile_commands.json). */
  defines?: Readonly<Record<string, string>>;
  blockSizeNames?: readonly string[];
}

/** More combinations than this are checked one parameter at a time. */
const MAX_COMBINATIONS = 64;
const GRID_SIZE_NAMES = ['grid_size_x', 'grid_size_y', 'grid_size_z'];

/** The preprocessor's options for a space: parameters with one value (and `fixed` ones) known, the others varying. */
export function spaceOptions(tuneParams: TuneParams, context: SourceContext, fixed: Config = {}): PreprocessOptions {
  const known: Config = { ...Object.fromEntries(Object.entries(tuneParams).filter(([, v]) => v.length === 1).map(([k, v]) => [k, v[0]!])), ...fixed };
  const varying = Object.keys(tuneParams).filter((k) => !(k in known));
  const defines: Record<string, string> = { ...context.defines };
  resolveBlockSizeNames(context.blockSizeNames).forEach((name, i) => {
    if (!(name in tuneParams)) defines[name] = String(i === 0 ? DEFAULT_BLOCK_X : 1);
  });
  for (const [name, value] of Object.entries(known)) defines[name] = defineValue(value);
  defines.kernel_tuner = '1';
  return {
    world: 'closed',
    defines,
    definedWithUnknownValue: [...varying, ...GRID_SIZE_NAMES],
    tunables: new Set(Object.keys(tuneParams)),
    includes: { ...(context.filePath && { filePath: context.filePath }), includePaths: context.includePaths ?? [], ...(context.readFile && { readFile: context.readFile }) },
  };
}

/** The preprocessor's options without a space (the parameters unknown): only what the tuner always defines is known. */
export function openOptions(context: SourceContext): PreprocessOptions {
  return {
    world: 'open',
    defines: { ...context.defines, kernel_tuner: '1' },
    includes: { ...(context.filePath && { filePath: context.filePath }), includePaths: context.includePaths ?? [], ...(context.readFile && { readFile: context.readFile }) },
  };
}

export class SignatureVariesError extends Error {
  override name = 'SignatureVariesError';
}

/**
 * The kernel `kernelName` (or the only one) as the space's configurations compile it (see the module comment); throws
 * SignatureVariesError when a configuration would compile another signature, or none.
 */
export async function kernelOfSpace(code: string, fileName: string, kernelName: string | undefined, tuneParams: TuneParams, context: SourceContext): Promise<SpaceKernel> {
  const baseline = preprocess(code, fileName, spaceOptions(tuneParams, context));
  const kernels = await kernelsOf(baseline);
  const views: Preprocessed[] = [baseline];
  // Without a name, the only kernel: one name, perhaps in several branches the configurations tell apart.
  const kernelNames = new Set(kernels.map((k) => k.qualifiedName));
  const wanted = kernelName ?? (kernelNames.size === 1 ? [...kernelNames][0]! : undefined);
  const named = wanted === undefined ? [] : kernels.filter((k) => k.qualifiedName === wanted || k.name === wanted);
  const varying = new Set(Object.entries(tuneParams).filter(([, v]) => v.length > 1).map(([k]) => k));
  const relevant = relevantGroups(baseline.groups, varying);
  const names = [...new Set(relevant.flatMap((g) => g.tunables.filter((t) => varying.has(t))))];
  const configured = assignments(names, tuneParams).map((assignment) => {
    const view = preprocess(code, fileName, spaceOptions(tuneParams, context, assignment));
    views.push(view);
    return { assignment, view };
  });
  if (named.length === 0) return { kernel: null, kernels, views };
  const why = (assignment: Config) => {
    const groups = relevant.filter((g) => g.tunables.some((t) => t in assignment)).map((g) => `${baseline.files[g.file]!.fileName}:${g.line}: ${g.directive}`);
    return `${describeAssignment(assignment)}${groups.length > 0 ? ` (${groups.join('; ')})` : ''}`;
  };
  if (named.length > 1) {
    // One name in several branches: each configuration must compile one of them, and always with one signature.
    if (configured.length === 0) findKernel(named, wanted!); // throws: ambiguous to every configuration
    let kernel: KernelSignature | undefined;
    for (const { assignment, view } of configured) {
      const found = findKernel(await kernelsOf(view), wanted!);
      kernel = compared(kernel, found, assignment, why);
    }
    // The kernels of the space: that name once, as the configurations compile it.
    return { kernel: kernel!, kernels: kernels.flatMap((k) => (k === named[0] ? [kernel!] : named.includes(k) ? [] : [k])), views };
  }
  const kernel = named[0]!;
  const fileIndex = kernel.file === undefined ? 0 : baseline.files.findIndex((f) => f.path === kernel.file);
  const region = (view: string) => view.slice(kernel.range.startIndex, kernel.bodyRange.startIndex).replace(/\s+/g, ' ').trim();
  const baselineRegion = region(baseline.files[fileIndex]!.view);
  for (const { assignment, view } of configured) {
    const file = view.files[fileIndex];
    // A declaration that reads the same is the same signature; only one that reads differently is parsed.
    if (file && region(file.view) === baselineRegion) continue;
    compared(kernel, file && findKernel(await kernelsOfFile(file, fileIndex > 0), kernel.qualifiedName), assignment, why);
  }
  return { kernel, kernels, views };
}

/** `found`, checked to exist and to have the signature of `kernel` (the first one found, when undefined). */
function compared(kernel: KernelSignature | undefined, found: KernelSignature | null | undefined, assignment: Config, why: (a: Config) => string): KernelSignature {
  const name = kernel?.qualifiedName ?? found?.qualifiedName;
  if (!found) {
    throw new SignatureVariesError(`kernel '${name}' is not compiled when ${why(assignment)}: every configuration of the space must compile it; fix ${Object.keys(assignment).join(', ')} to values that do, or restrict them`);
  }
  const comparison = kernel ? sameSignature(kernel, found) : { same: true as const };
  if (!comparison.same) {
    throw new SignatureVariesError(
      `kernel '${name}' has another signature when ${why(assignment)}: ${comparison.differences.join('; ')}. ` +
        'Every configuration is checked against the same inputs, so the parameters must be the same in every branch, or the parameter fixed to one value',
    );
  }
  return kernel ?? found;
}

export interface SpaceKernel {
  /** The kernel asked for (or the only one), null when the space's view has none of that name. */
  kernel: KernelSignature | null;
  /** Every kernel of the space's view. */
  kernels: KernelSignature[];
  /** The space's view, then the view of each combination of values checked: what typedefs may stand for, in all. */
  views: Preprocessed[];
}

/** Conditionals outside function bodies that a varying parameter leaves open: they may change a declaration. */
function relevantGroups(groups: readonly ConditionalGroup[], varying: ReadonlySet<string>): ConditionalGroup[] {
  return groups.filter((g) => g.topLevel && g.resolution !== 'decided' && g.tunables.some((t) => varying.has(t)));
}

/** Every combination of the names' values, or each value of one name at a time when they are too many. */
function assignments(names: readonly string[], tuneParams: TuneParams): Config[] {
  const count = names.reduce((n, name) => n * tuneParams[name]!.length, 1);
  if (names.length === 0) return [];
  if (count > MAX_COMBINATIONS) return names.flatMap((name) => tuneParams[name]!.map((value) => ({ [name]: value })));
  let out: Config[] = [{}];
  for (const name of names) out = out.flatMap((a) => tuneParams[name]!.map((value: ParamValue) => ({ ...a, [name]: value })));
  return out;
}

function describeAssignment(assignment: Config): string {
  return Object.entries(assignment)
    .map(([k, v]) => `${k} = ${defineValue(v)}`)
    .join(', ');
}
