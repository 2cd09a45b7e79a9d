/**
 * A variant of an evolutionary session's population as the editor gets it: its code with its best values defined and
 * the host's launches of the kernel rewritten for them, exactly as the session's final kernel is made (finalize.ts),
 * so the best variant's is the session's final kernel. What "Propose in editor" shows and "Branch from here" starts
 * from. No vscode import: unit-tested on recorded sessions.
 */
import { finalizeKernel } from '../engine/candidate/finalize';
import type { VariantView } from '../engine/progress/events';
import type { SessionView } from '../engine/session/session-view';

export async function variantKernel(view: SessionView, variantId: string): Promise<{ variant: VariantView; code: string }> {
  const variant = view.population?.variants.find((v) => v.id === variantId);
  if (!variant) throw new Error(`this session has no variant ${variantId}`);
  const final = await finalizeKernel({
    code: variant.code,
    kernelName: view.kernel?.name ?? view.header.kernelName,
    params: variant.bestParams,
    problemSize: view.analysis?.problemSize ?? [],
    ...(variant.gridDivisors && { gridDivisors: variant.gridDivisors }),
    sharedMemBytes: variant.sharedMemBytes ?? null,
  });
  return { variant, code: final.code };
}
