import { describe, expect, it } from 'vitest';
import { describeFailures } from '../../src/extension/preflight';

const gpu = { kind: 'gpu-unavailable' as const, message: 'libcuda.so.1 was not found: install the NVIDIA driver' };
const llm = { kind: 'llm-unreachable' as const, message: 'nothing answers at http://127.0.0.1:11434.' };

describe('the checks before a session', () => {
  it('names both problems at once when the LLM and the GPU are both missing, with every button that helps', () => {
    const report = describeFailures([llm, gpu], 'kernelTuner');
    expect(report.message).toBe(
      '2 problems. (1) The LLM cannot be used: nothing answers at http://127.0.0.1:11434. (2) No usable GPU: libcuda.so.1 was not found: install the NVIDIA driver.',
    );
    expect(report.actions).toEqual(['Open settings', 'Show log', 'GPU setup']);
    expect(report.settings).toBe('kernelTuner.llm');
  });

  it('says a command of the message without markdown (a notification shows backticks as they are)', () => {
    const down = { kind: 'llm-unreachable' as const, message: 'cannot reach Ollama at http://127.0.0.1:11434: is it running? `ollama serve`' };
    const missing = { kind: 'llm-model-missing' as const, message: 'model qwen is not available on Ollama at http://127.0.0.1:11434: `ollama pull qwen`' };
    expect(describeFailures([down], 'kernelTuner').message).toBe('The LLM cannot be used: cannot reach Ollama at http://127.0.0.1:11434: is it running? Run "ollama serve".');
    expect(describeFailures([missing], 'kernelTuner').message).toBe('The LLM cannot be used: model qwen is not available on Ollama at http://127.0.0.1:11434: run "ollama pull qwen".');
    expect(describeFailures([{ kind: 'other', message: 'Run `npm run build` to build it.' }], 'kernelTuner').message).toBe('Cannot start tuning: Run "npm run build" to build it.');
  });

  it('names one problem with its own buttons and settings; a GPU that cannot be used leads to the GPU setup, never to a setting', () => {
    expect(describeFailures([gpu], 'kernelTuner')).toEqual({ message: 'No usable GPU: libcuda.so.1 was not found: install the NVIDIA driver.', actions: ['GPU setup', 'Show log'], settings: 'kernelTuner.llm' });
    const auth = describeFailures([{ kind: 'llm-auth', message: 'the server refused the API key' }], 'kernelTuner');
    expect(auth.actions).toEqual(['Set API key', 'Open settings']);
    expect(auth.settings).toBe('kernelTuner.llm');
  });
});
