// Kernel Tuner's loop_unroll_factor parameters. `#pragma unroll N` takes a constant expression, and neither nvcc nor
// NVRTC expands macros in it, so a tunable parameter whose name contains "loop_unroll_factor" reaches the kernel as
// `constexpr int NAME = V;` instead of -DNAME=V; with the value 0 (no unroll pragma for that loop) its
// `#pragma unroll NAME` lines are blanked and nothing is defined. Kernel Tuner does the same (prepare_kernel_string),
// so `#pragma unroll loop_unroll_factor_t` tunes as it does there.

const UNROLL_FACTOR = /loop_unroll_factor/;

/** The source and defines a compiler gets for a configuration, loop unroll factors as constexpr (see above). */
export function withLoopUnrollFactors(source: string, defines: Readonly<Record<string, string>>): { source: string; defines: Record<string, string> } {
  const others: Record<string, string> = {};
  const constants: string[] = [];
  let text = source;
  for (const [name, value] of Object.entries(defines)) {
    if (!UNROLL_FACTOR.test(name)) {
      others[name] = value;
    } else if (value.trim() === '0') {
      text = text.replace(new RegExp(`^[ \\t]*#[ \\t]*pragma[ \\t]+unroll[ \\t]+${name}\\b.*$`, 'gm'), (line) => ' '.repeat(line.length));
    } else {
      constants.push(`constexpr int ${name} = ${value};`);
    }
  }
  // On one line, then #line 1: every line of the source keeps its number.
  return { source: constants.length > 0 ? `${constants.join(' ')}\n#line 1\n${text}` : text, defines: others };
}
