// What a kernel's interface is (KernelSignature: parameters, template parameters, launch bounds, source ranges), the
// ParseError that says it could not be read, and lookups over parsed kernels: by name, at a position, as NVRTC names
// it, and whether a rewrite kept the interface.
import { normalizeType } from './parse-tree';

export interface SourceRange {
  startLine: number;
  startColumn: number;
  endLine: number;
  endColumn: number;
  startIndex: number;
  endIndex: number;
}

/** A problem at a place in the source; `line`/`column` are 0-based, `message` starts with "file:line:col:" (1-based). */
export interface SourceDiagnostic {
  line: number;
  column: number;
  message: string;
}

export interface TemplateParameter {
  /** `template` for template template parameters (`template <typename> class TT`). */
  kind: 'type' | 'value' | 'template';
  /** Empty for an unnamed parameter. */
  name: string;
  /** Value parameters only: the normalised type, e.g. "int", "unsigned int". */
  type?: string;
  default?: string;
  /** A parameter pack (`typename... Ts`, `int... Ns`). */
  variadic: boolean;
}

/** `__launch_bounds__(maxThreads, minBlocks, maxBlocksPerCluster)`: each argument is the expression's text. */
export interface LaunchBounds {
  maxThreads: string;
  minBlocks?: string;
  maxBlocksPerCluster?: string;
  range: SourceRange;
}

export interface KernelParameter {
  /** Empty for an unnamed parameter. */
  name: string;
  /** Normalised type without the name: qualifiers of the data first, e.g. "const float *__restrict__", "int &", "int [4]". */
  type: string;
  /** The type without qualifiers, pointers or references: "float", "unsigned int", "float4", "T", "thrust::complex<float>". */
  baseType: string;
  /** Pointers and arrays (which decay to pointers, as in C). */
  isPointer: boolean;
  pointerDepth: number;
  /** The data is const: the pointed-to data for pointers (`const float*`, `float const*`), else the value itself. */
  isConst: boolean;
  /** `__restrict__` (or MSVC's `__restrict`) on any pointer level. */
  isRestrict: boolean;
  isReference: boolean;
  defaultValue?: string;
  /** "[4]", "[]" or "[N][M]" for array parameters. */
  arraySuffix?: string;
  /** When the base type is a typedef of the file or its headers: the types it may stand for (see type-aliases.ts). */
  aliasOf?: string[];
}

/** A kernel definition. Plain data (no methods), so it crosses worker and webview boundaries intact. */
export interface KernelSignature {
  name: string;
  /** `namespace::name`, or `name` at global scope. */
  qualifiedName: string;
  /** Enclosing named namespaces, outermost first (anonymous namespaces add nothing). */
  namespace: string[];
  /** Declared with a `template <...>` prefix (including an explicit specialization `template <>`). */
  isTemplate: boolean;
  templateParameters: TemplateParameter[];
  /** Explicit specialization only: the arguments after the name, e.g. ["float", "16"] for `k<float, 16>`. */
  templateArguments?: string[];
  launchBounds?: LaunchBounds;
  /** Other specifiers and attributes of the definition in source order, e.g. ["static", "__noinline__", "__maxnreg__(32)"]. */
  attributes: string[];
  /** Inside `extern "C" { }` or declared `extern "C" __global__`. */
  externC: boolean;
  parameters: KernelParameter[];
  /** The whole definition, template prefix and attributes included. */
  range: SourceRange;
  nameRange: SourceRange;
  bodyRange: SourceRange;
  /** The source from the start of `range` to the body's `{`, trailing space removed, line endings as "\n". */
  signatureText: string;
  /** Forward declarations and explicit instantiations of the same qualified name. */
  declarations: SourceRange[];
  /** Syntax errors inside the body (not fatal; see kernel-parser.ts). */
  warnings: SourceDiagnostic[];
  /** The local header that defines it (absolute path); absent for a kernel of the file itself. Ranges are the header's. */
  file?: string;
}

/** The source could not be parsed well enough to know a kernel's interface. `line`/`column` are 0-based. */
export class ParseError extends Error {
  override readonly name = 'ParseError';

  constructor(
    readonly fileName: string,
    readonly line: number,
    readonly column: number,
    message: string,
    /** Every fatal problem found, the first of which is `line`/`column`. */
    readonly errors: SourceDiagnostic[],
    /** The kernels whose signatures were intact (the editor may still offer them). */
    readonly kernels: KernelSignature[],
  ) {
    super(message);
  }
}

export type SignatureComparison = { same: true } | { same: false; differences: string[] };

/**
 * The kernel called `name` (qualified, e.g. "ns::k", or plain), or null. Throws when the name is ambiguous (overloads,
 * the same name in several namespaces, or in several #if branches), naming the candidates and their lines.
 */
export function findKernel(kernels: readonly KernelSignature[], name: string): KernelSignature | null {
  const qualified = kernels.filter((k) => k.qualifiedName === name);
  const matches = qualified.length > 0 ? qualified : kernels.filter((k) => k.name === name);
  if (matches.length > 1) {
    const where = matches.map((k) => `${k.qualifiedName} (line ${k.range.startLine + 1})`).join(', ');
    throw new Error(`kernel name '${name}' is ambiguous: ${where}`);
  }
  return matches[0] ?? null;
}

/** The kernel whose definition contains the 0-based position (both ends inclusive), or null. */
export function kernelAt(kernels: readonly KernelSignature[], line: number, column: number): KernelSignature | null {
  const notBefore = (l: number, c: number, L: number, C: number) => l > L || (l === L && c >= C);
  return (
    kernels.find(
      ({ range: r }) => notBefore(line, column, r.startLine, r.startColumn) && notBefore(r.endLine, r.endColumn, line, column),
    ) ?? null
  );
}

/**
 * The C++ name expression of a kernel for NVRTC (nvrtcAddNameExpression), e.g. "ns::matmul<float, 16>".
 * `templateArgs` by position or by parameter name; trailing parameters with defaults may be left out, earlier ones
 * without a value take their default's text. An explicit specialization uses its own arguments when none are given.
 */
export function nameExpression(kernel: KernelSignature, templateArgs?: TemplateArguments): string {
  const given = templateArgs ?? [];
  const count = isList(given) ? given.length : Object.keys(given).length;
  const where = `kernel '${kernel.qualifiedName}'`;
  if (!kernel.isTemplate) {
    if (count > 0) throw new Error(`${where} is not a template; it takes no template arguments`);
    return kernel.qualifiedName;
  }
  if (count === 0 && kernel.templateArguments) return `${kernel.qualifiedName}<${kernel.templateArguments.join(', ')}>`;
  const params = kernel.templateParameters;
  let values: (string | undefined)[];
  if (isList(given)) {
    if (given.length > params.length && !params.at(-1)?.variadic) {
      throw new Error(`${where} takes ${params.length} template arguments, got ${given.length}`);
    }
    values = given.map(String);
  } else {
    const unknown = Object.keys(given).filter((n) => !params.some((p) => p.name === n));
    if (unknown.length > 0) throw new Error(`${where} has no template parameter ${unknown.map((u) => `'${u}'`).join(', ')}`);
    values = params.map((p) => (Object.hasOwn(given, p.name) ? String(given[p.name]) : undefined));
  }
  // The list ends at the last given value; a gap before it takes the parameter's default, one after it is left out.
  let last = values.length - 1;
  while (last >= 0 && values[last] === undefined) last--;
  const args = values.slice(0, last + 1).map((v, i) => v ?? params[i]?.default);
  params.forEach((p, i) => {
    if ((i <= last ? args[i] : p.default) === undefined && !p.variadic) {
      throw new Error(`template parameter '${p.name}' of ${where} needs a value (it has no default)`);
    }
  });
  return `${kernel.qualifiedName}<${args.join(', ')}>`;
}

export type TemplateArguments = readonly (string | number | boolean)[] | Readonly<Record<string, string | number | boolean>>;

function isList(args: TemplateArguments): args is readonly (string | number | boolean)[] {
  return Array.isArray(args);
}

const QUALIFIER_WORDS = /\b(const|volatile|__restrict__|__grid_constant__)\b/g;

/**
 * Whether two kernels have the same interface: name, template parameters (kind, name, type) and parameters (names and
 * normalised types, in order). Whitespace and `const` placement never count (`float const *` is `const float*`);
 * `ignoreQualifiers` also accepts added or removed const/volatile/__restrict__/__grid_constant__, which do not change
 * what the host passes.
 */
export function sameSignature(a: KernelSignature, b: KernelSignature, options: { ignoreQualifiers?: boolean } = {}): SignatureComparison {
  const typeOf = (t: string) => (options.ignoreQualifiers ? normalizeType(t.replace(QUALIFIER_WORDS, ' ')) : t);
  const differences: string[] = [];
  if (a.qualifiedName !== b.qualifiedName) differences.push(`kernel name changed: '${a.qualifiedName}' -> '${b.qualifiedName}'`);
  // A template parameter's "type" is its value type, or its kind ("type", "template"); "..." marks a pack.
  const templateEntry = (p: TemplateParameter) => ({
    name: p.name,
    type: (p.kind === 'value' ? typeOf(p.type ?? '') : p.kind) + (p.variadic ? '...' : ''),
  });
  compareLists('template parameter', a.templateParameters.map(templateEntry), b.templateParameters.map(templateEntry), differences);
  compareLists(
    'parameter',
    a.parameters.map((p) => ({ name: p.name, type: typeOf(p.type) })),
    b.parameters.map((p) => ({ name: p.name, type: typeOf(p.type) })),
    differences,
  );
  return differences.length === 0 ? { same: true } : { same: false, differences };
}

function compareLists(what: string, a: { name: string; type: string }[], b: { name: string; type: string }[], out: string[]): void {
  if (a.length !== b.length) {
    const names = (l: { name: string }[]) => l.map((p) => p.name || '(unnamed)').join(', ') || 'none';
    out.push(`${what} count changed: ${a.length} -> ${b.length} (was: ${names(a)}; now: ${names(b)})`);
  }
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (x.name !== y.name) out.push(`${what} ${i + 1}: name changed: '${x.name}' -> '${y.name}'`);
    if (x.type !== y.type) out.push(`${what} ${i + 1} '${y.name}': type changed: '${x.type}' -> '${y.type}'`);
  }
}
