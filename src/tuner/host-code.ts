// NVRTC compiles device code only. A .cu file that also holds its host program (main, runtime API calls, <<<>>>
// launches, host-only headers) fails there with errors that do not say why; this finds the reason to say it plainly.

const HOST_MARKERS: readonly [RegExp, string][] = [
  [/<<<[^>]*>>>/, 'a <<<...>>> kernel launch'],
  [/\bint\s+main\s*\(/, 'a main() function'],
  [/\bcuda(Malloc|Memcpy|Free|DeviceSynchronize|StreamCreate|EventCreate)\w*\s*\(/, 'CUDA runtime API calls'],
  [/#\s*include\s*<(iostream|cstdio|stdio\.h|cstdlib|stdlib\.h|vector|string|chrono|fstream|cuda_runtime\.h)>/, 'host-only headers'],
];

/** What host code the source holds (comments ignored), or undefined when it looks like device code only. */
export function hostCodeIn(code: string): string | undefined {
  const text = code.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
  const found = HOST_MARKERS.filter(([pattern]) => pattern.test(text)).map(([, what]) => what);
  return found.length > 0 ? found.join(', ') : undefined;
}

/** A sentence to append to a compile failure when host code is the likely cause. */
export function hostCodeHint(code: string): string {
  const found = hostCodeIn(code);
  return found
    ? `\nThe source holds host code (${found}), which NVRTC cannot compile: give the tuner the kernel with the device code it uses (#includes of device headers, __device__ functions, constants), e.g. in its own .cu or .cuh file.`
    : '';
}
