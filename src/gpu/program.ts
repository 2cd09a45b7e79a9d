// Program: a CUDA source plus how to compile it (cuda.core's Program + ProgramOptions in one checked object).
// Both compiler backends take the same Program; defines are how tunable parameters reach the kernel.

import { checkBoolean, checkObject, checkString, checkStringArray } from './check';
import { argumentError } from './errors';
import type { NativeCompileRequest } from './native-types';

export interface ProgramInit {
  source: string;
  /** Name shown in compiler diagnostics; default "kernel.cu". */
  fileName?: string;
  /** C++ name expressions of the kernels to get, e.g. "vector_add" or "matmul<float, 16>" (templates are
   * instantiated through them). At least one. */
  nameExpressions: readonly string[];
  /** Target such as "sm_90"; default: the device's own (from its compute capability). */
  arch?: string;
  /** Preprocessor definitions, e.g. { block_size_x: 128 } → -Dblock_size_x=128. */
  defines?: Record<string, string | number>;
  /** Extra compiler options, passed as they are (e.g. "--use_fast_math", "-lineinfo"). */
  options?: readonly string[];
  includePaths?: readonly string[];
  /**
   * Headers given in memory: an `#include` of a key reads its value, before any include path is searched (NVRTC's own
   * mechanism; nvcc gets them as files in a directory searched first). Keys are include spellings such as "common.h".
   */
  headers?: Readonly<Record<string, string>>;
  /** Also produce PTX. */
  wantPtx?: boolean;
}

const ARCH = /^sm_\d{2,3}[af]?$/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ARCH_OPTION = /^(-arch|--gpu-architecture|-gencode|--generate-code|-code)\b/;

/** The device's own target, e.g. [9, 0] → "sm_90". */
export function archForComputeCapability(cc: readonly [number, number]): string {
  return `sm_${cc[0]}${cc[1]}`;
}

export class Program {
  readonly source: string;
  readonly fileName: string;
  readonly nameExpressions: readonly string[];
  readonly arch: string | undefined;
  readonly defines: Readonly<Record<string, string | number>>;
  readonly options: readonly string[];
  readonly includePaths: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly wantPtx: boolean;

  constructor(init: ProgramInit) {
    const o = checkObject('program', init);
    this.source = checkString('source', o.source);
    this.fileName = o.fileName === undefined ? 'kernel.cu' : checkString('fileName', o.fileName);
    if (/[/\\]/.test(this.fileName)) throw argumentError('fileName', 'a file name without directories', this.fileName);
    const names = checkStringArray('nameExpressions', o.nameExpressions);
    if (names.length === 0) throw argumentError('nameExpressions', 'at least one kernel name expression', names);
    this.nameExpressions = Object.freeze(names);
    if (o.arch !== undefined && (typeof o.arch !== 'string' || !ARCH.test(o.arch)))
      throw argumentError('arch', 'a target such as "sm_90"', o.arch);
    this.arch = o.arch as string | undefined;
    const defines: Record<string, string | number> = {};
    for (const [key, value] of Object.entries(o.defines === undefined ? {} : checkObject('defines', o.defines))) {
      if (!IDENTIFIER.test(key)) throw argumentError('defines', 'macro names that are C identifiers', key);
      if (typeof value === 'number' ? !Number.isFinite(value) : typeof value !== 'string' || /[\r\n]/.test(value))
        throw argumentError(`defines.${key}`, 'a finite number or a single-line string', value);
      defines[key] = value as string | number;
    }
    this.defines = Object.freeze(defines);
    this.options = Object.freeze(o.options === undefined ? [] : checkStringArray('options', o.options));
    const archOption = this.options.find((opt) => ARCH_OPTION.test(opt));
    if (archOption) throw argumentError('options', 'no target option (set arch instead)', archOption);
    this.includePaths = Object.freeze(o.includePaths === undefined ? [] : checkStringArray('includePaths', o.includePaths));
    const headers: Record<string, string> = {};
    for (const [name, text] of Object.entries(o.headers === undefined ? {} : checkObject('headers', o.headers))) {
      if (name === '' || /[\0\r\n]/.test(name)) throw argumentError('headers', 'include names without line breaks', name);
      headers[name] = checkString(`headers[${JSON.stringify(name)}]`, text);
    }
    this.headers = Object.freeze(headers);
    this.wantPtx = o.wantPtx === undefined ? false : checkBoolean('wantPtx', o.wantPtx);
    Object.freeze(this);
  }

  static from(program: Program | ProgramInit): Program {
    return program instanceof Program ? program : new Program(program);
  }

  /** -DNAME=VALUE for every define, in insertion order (same spelling for NVRTC and nvcc). */
  defineOptions(): string[] {
    return Object.entries(this.defines).map(([k, v]) => `-D${k}=${v}`);
  }

  /** The request for the addon's NVRTC compile, for `arch` when the program does not name its own. */
  toNativeRequest(defaultArch: string): NativeCompileRequest {
    return {
      source: this.source,
      fileName: this.fileName,
      nameExpressions: [...this.nameExpressions],
      options: [
        `--gpu-architecture=${this.arch ?? defaultArch}`,
        ...this.defineOptions(),
        ...this.includePaths.map((p) => `--include-path=${p}`),
        ...this.options,
      ],
      ...(Object.keys(this.headers).length > 0 && { headers: { names: Object.keys(this.headers), sources: Object.values(this.headers) } }),
      wantPtx: this.wantPtx,
    };
  }
}
