// vitest globalSetup: the worker tests start real child processes running dist/gpu-worker.js, so the JS bundles are
// rebuilt once before any test runs (vitest itself runs the TypeScript sources; the child runs the bundle).
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

export default function setup(): void {
  const root = path.resolve(__dirname, '..', '..');
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs'), '--js-only'], { cwd: root, stdio: 'inherit' });
}
