// Finds and loads the Node-API addon (native/, built to dist/native/kernel_tuner_native.node). Loading it opens no
// CUDA library: the addon dlopens libcuda and NVRTC on first use, so this succeeds on machines without a GPU.
// Only the GPU worker process calls this (see worker-main.ts).

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { NativeAddon } from './native-types';

/** Overrides where the addon is loaded from (a path to a .node file). */
export const NATIVE_ADDON_ENV = 'LKT_NATIVE_ADDON';
const ADDON_FILE = 'kernel_tuner_native.node';
const PACKAGE_NAME = 'llm-kernel-tuner';

/** Every function of NativeAddon: a file that lacks one is not this addon (or an outdated build of it). */
const EXPORTS: readonly (keyof NativeAddon)[] = [
  'status',
  'driverVersion',
  'nvrtcVersion',
  'deviceCount',
  'deviceInfo',
  'compile',
  'contextCreate',
  'contextDestroy',
  'synchronize',
  'memInfo',
  'moduleLoad',
  'moduleUnload',
  'moduleGetFunction',
  'functionAttributes',
  'functionOccupancy',
  'functionSetMaxDynamicShared',
  'memAlloc',
  'memFree',
  'memUpload',
  'memDownload',
  'memFill',
  'memCopy',
  'memCopyBenchmark',
  'launch',
  'benchmark',
  'energyBenchmark',
  'nvmlSnapshot',
];

// One instance per process: the addon's state (the CUDA context and its handles) is per process, and loading the
// same file again would only hand out a second set of functions over it.
const loaded = new Map<string, NativeAddon>();

/** The folder holding package.json of this project, searched upwards from `start`, or null. */
function findProjectRoot(start: string): string | null {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    try {
      if (fs.existsSync(pkg) && (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME) return dir;
    } catch {
      // An unreadable or invalid package.json is not ours; keep walking up.
    }
    if (path.dirname(dir) === dir) return null;
  }
}

/**
 * Where the addon is: $LKT_NATIVE_ADDON if set; else `native/` beside this code (the bundles in dist/ have it
 * there); else dist/native/ of the project that contains this file (source runs: tests, ts-node).
 */
export function nativeAddonPath(): string {
  const override = process.env[NATIVE_ADDON_ENV];
  if (override) return path.resolve(override);
  const beside = path.join(__dirname, 'native', ADDON_FILE);
  if (fs.existsSync(beside)) return beside;
  const root = findProjectRoot(__dirname);
  return root ? path.join(root, 'dist', 'native', ADDON_FILE) : beside;
}

/** Loads the addon once per process; throws one Error saying where it looked and why it failed. */
export function loadNativeAddon(): NativeAddon {
  const file = nativeAddonPath();
  const cached = loaded.get(file);
  if (cached) return cached;
  const fail = (reason: string): never => {
    throw new Error(`could not load the native addon at ${file}: ${reason}. Run \`npm run build\` to build it.`);
  };
  if (!fs.existsSync(file)) fail('the file does not exist');
  const mod: { exports: Record<string, unknown> } = { exports: {} };
  try {
    // process.dlopen is what require() does for .node files, without depending on how this code was bundled or
    // transpiled (CommonJS bundle, vitest's ESM transform).
    process.dlopen(mod, file);
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const missing = EXPORTS.filter((name) => typeof mod.exports[name] !== 'function');
  if (missing.length > 0) fail(`it lacks the functions ${missing.join(', ')} (an outdated build or another file)`);
  const addon = mod.exports as unknown as NativeAddon;
  loaded.set(file, addon);
  return addon;
}
