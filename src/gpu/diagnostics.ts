// Parses compiler logs (NVRTC, nvcc's EDG front end, the host preprocessor) into located diagnostics, so that the
// tuner and the editor can point at the offending line. Lines without a file and line (ptxas, linker) stay in the
// full log only.

export interface CompileDiagnostic {
  file: string;
  line: number;
  column?: number;
  severity: 'error' | 'warning';
  message: string;
}

// EDG (NVRTC and nvcc): `kernel.cu(12): error: identifier "x" is undefined`, `k.cu(3): warning #177-D: ...`.
const EDG = /^(.+?)\((\d+)\): (catastrophic error|fatal error|error|warning|remark)(?: #[\w-]+)?: (.*)$/;
// GCC-style (nvcc runs the host preprocessor first): `k.cu:2:2: error: #error BLOCK must be 128`.
const GCC = /^(.+?):(\d+):(?:(\d+):)? (fatal error|error|warning): (.*)$/;

function severityOf(word: string): 'error' | 'warning' | null {
  if (word === 'warning') return 'warning';
  if (word === 'remark') return null;
  return 'error';
}

/** Every located error and warning of a compiler log, in log order. */
export function parseDiagnostics(log: string): CompileDiagnostic[] {
  const out: CompileDiagnostic[] = [];
  for (const raw of log.split(/\r?\n/)) {
    const line = raw.trimEnd();
    const edg = EDG.exec(line);
    if (edg) {
      const severity = severityOf(edg[3]!);
      if (severity) out.push({ file: edg[1]!, line: Number(edg[2]), severity, message: edg[4]!.trim() });
      continue;
    }
    const gcc = GCC.exec(line);
    if (gcc) {
      const severity = severityOf(gcc[4]!);
      if (!severity) continue;
      const d: CompileDiagnostic = { file: gcc[1]!, line: Number(gcc[2]), severity, message: gcc[5]!.trim() };
      if (gcc[3] !== undefined) d.column = Number(gcc[3]);
      out.push(d);
    }
  }
  return out;
}

/** One line for an error message: the first error (located if possible) and how many more there are. */
export function summarizeLog(log: string, diagnostics: readonly CompileDiagnostic[]): string {
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) {
    const first = errors[0]!;
    const where = `${first.file}(${first.line}${first.column !== undefined ? `:${first.column}` : ''})`;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more error${errors.length > 2 ? 's' : ''})` : '';
    return `${where}: ${first.message}${more}`;
  }
  const errorLine = log.split(/\r?\n/).find((l) => /\berror\b/i.test(l));
  return (errorLine ?? log.split(/\r?\n/).find((l) => l.trim() !== '') ?? 'no compiler output').trim();
}
