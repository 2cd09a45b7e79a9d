/**
 * What kernelTuner.compilerOptions may hold: the options that say what the kernel's code means and how it is compiled
 * for the device, and nothing that names a program to run, a file to write or more options to read. A repository's
 * .vscode/settings.json sets this setting as easily as the user does, and nvcc runs what `-ccbin` names. Pure.
 *
 * Allowed, and why the tuner needs them:
 * - -D NAME[=VALUE], -U NAME (--define-macro, --undefine-macro): the kernel's macros, as the project's build sets them;
 * - -I DIR, -isystem DIR (--include-path, --system-include): where its headers are (files read, nothing run);
 * - -std=c++NN (--std), --expt-relaxed-constexpr, --expt-extended-lambda (--extended-lambda), -rdc=true|false
 *   (--relocatable-device-code): the language the code is written in;
 * - --use_fast_math, -ftz, -prec-div, -prec-sqrt, -fmad (true|false): floating-point code generation, which changes
 *   both speed and results, so the tuner must time and check what the build uses;
 * - -arch=sm_NN (--gpu-architecture), -maxrregcount=N: the target and the register limit;
 * - -lineinfo (--generate-line-info), -G (--device-debug): for a profiler or a debugger;
 * - --restrict, -w (--disable-warnings).
 * Anything else is refused, among them -ccbin (--compiler-bindir), -Xcompiler and the other -X options that pass
 * options on to another program, -o, -odir, -keep-dir, -MF (files written), @file and -optf (options read from a file)
 * and --run.
 */

interface Flag {
  names: readonly string[];
  /** What the value must be; no pattern: the flag takes no value. */
  value?: RegExp;
}

const BOOL = /^(true|false)$/;

const ALLOWED: readonly Flag[] = [
  { names: ['-D', '--define-macro'], value: /^[A-Za-z_]\w*(=[\s\S]*)?$/ },
  { names: ['-U', '--undefine-macro'], value: /^[A-Za-z_]\w*$/ },
  { names: ['-I', '--include-path'], value: /^[^@-]/ },
  { names: ['-isystem', '--system-include'], value: /^[^@-]/ },
  { names: ['-std', '--std'], value: /^c\+\+\d\d$/ },
  { names: ['-rdc', '--relocatable-device-code'], value: BOOL },
  { names: ['-ftz', '--ftz'], value: BOOL },
  { names: ['-prec-div', '--prec-div'], value: BOOL },
  { names: ['-prec-sqrt', '--prec-sqrt'], value: BOOL },
  { names: ['-fmad', '--fmad'], value: BOOL },
  { names: ['-arch', '--gpu-architecture'], value: /^(sm|compute)_\d+[af]?$/ },
  { names: ['-maxrregcount', '--maxrregcount'], value: /^\d+$/ },
  { names: ['--expt-relaxed-constexpr', '-expt-relaxed-constexpr'] },
  { names: ['--expt-extended-lambda', '-expt-extended-lambda', '--extended-lambda', '-extended-lambda'] },
  { names: ['--use_fast_math', '-use_fast_math'] },
  { names: ['-lineinfo', '--generate-line-info'] },
  { names: ['-G', '--device-debug'] },
  { names: ['--restrict', '-restrict'] },
  { names: ['-w', '--disable-warnings'] },
];

/** Why the options the tuner refuses most often are refused (`value`: the next item is theirs). */
const REFUSED: readonly { names: readonly string[]; value: boolean; why: string }[] = [
  { names: ['-ccbin', '--compiler-bindir'], value: true, why: 'it names the host compiler nvcc runs' },
  { names: ['-Xcompiler', '--compiler-options', '-Xptxas', '--ptxas-options', '-Xlinker', '--linker-options', '-Xnvlink', '--nvlink-options', '-Xarchive', '--archive-options'], value: true, why: 'it passes options on to another program' },
  { names: ['-o', '--output-file', '-odir', '--output-directory', '-keep-dir', '--keep-dir', '-MF', '--dependency-output'], value: true, why: 'it writes files where it says' },
  { names: ['-keep', '--keep'], value: false, why: 'it writes files where it says' },
  { names: ['-optf', '--options-file'], value: true, why: 'it reads more options from a file' },
  { names: ['-run-args', '--run-args'], value: true, why: 'it runs a program' },
  { names: ['-run', '--run'], value: false, why: 'it runs a program' },
];

/** The names the message lists as allowed: the first (shortest) name of each flag. */
export const ALLOWED_NAMES: readonly string[] = ALLOWED.map((f) => f.names[0]!);

export interface RefusedOption {
  option: string;
  why: string;
}

/** Splits `-Dname` / `--flag=value` / `--flag value` forms; one-letter flags (-D, -U, -I, -G, -w) may carry the value attached. */
function match(arg: string, next: string | undefined): { flag: Flag; value?: string; used: number } | undefined {
  for (const flag of ALLOWED) {
    for (const name of flag.names) {
      if (arg === name) {
        if (!flag.value) return { flag, used: 1 };
        return next === undefined ? undefined : { flag, value: next, used: 2 };
      }
      if (flag.value && arg.startsWith(`${name}=`)) return { flag, value: arg.slice(name.length + 1), used: 1 };
      if (flag.value && name.length === 2 && arg.startsWith(name) && arg.length > 2) return { flag, value: arg.slice(2), used: 1 };
    }
  }
  return undefined;
}

/** Why `arg` is refused, and how many items it takes (its value may be the next one). */
function refusalOf(arg: string, next: string | undefined): { why: string; used: number } {
  if (arg.startsWith('@')) return { why: 'it reads more options from a file', used: 1 };
  const known = REFUSED.find((r) => r.names.includes(arg.split('=')[0]!));
  if (!known) return { why: 'it is not an option the tuner needs', used: 1 };
  return { why: known.why, used: known.value && !arg.includes('=') && next !== undefined ? 2 : 1 };
}

/** The options refused (with why), in order; empty when every option is allowed. */
export function refusedCompilerOptions(options: readonly string[]): RefusedOption[] {
  const refused: RefusedOption[] = [];
  for (let i = 0; i < options.length; ) {
    const arg = options[i]!;
    const found = match(arg, options[i + 1]);
    if (found && (found.flag.value === undefined || found.flag.value.test(found.value ?? ''))) {
      i += found.used;
      continue;
    }
    const { why, used } = found ? { why: 'its value is not one the tuner takes', used: found.used } : refusalOf(arg, options[i + 1]);
    refused.push({ option: options.slice(i, i + used).join(' '), why });
    i += used;
  }
  return refused;
}
