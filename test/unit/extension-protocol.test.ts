import { describe, expect, it } from 'vitest';
import { parseFromWebview, ProtocolError } from '../../src/extension/protocol';

describe('messages from the webview', () => {
  it('accepts every message type in its documented shape and drops unknown fields', () => {
    expect(parseFromWebview({ type: 'ready', sessionId: null, extra: 1 })).toEqual({ type: 'ready', sessionId: null });
    expect(parseFromWebview({ type: 'cancel', sessionId: 's1' })).toEqual({ type: 'cancel', sessionId: 's1' });
    expect(parseFromWebview({ type: 'showDiff', sessionId: 's1', stepId: null })).toEqual({ type: 'showDiff', sessionId: 's1', stepId: null });
    expect(parseFromWebview({ type: 'openSideBySide', sessionId: 's1', stepId: '2' })).toEqual({ type: 'openSideBySide', sessionId: 's1', stepId: '2' });
    expect(parseFromWebview({ type: 'rendered', sessionId: 's1', eventCount: 12 })).toEqual({ type: 'rendered', sessionId: 's1', eventCount: 12 });
    expect(parseFromWebview({ type: 'branch', sessionId: 's1', stepId: '3' })).toEqual({ type: 'branch', sessionId: 's1', stepId: '3' });
    expect(parseFromWebview({ type: 'exportChart', sessionId: 's1', format: 'svg', data: '<svg></svg>' })).toEqual({ type: 'exportChart', sessionId: 's1', format: 'svg', data: '<svg></svg>' });
    expect(parseFromWebview({ type: 'proposeVariant', sessionId: 's1', variantId: 'v3' })).toEqual({ type: 'proposeVariant', sessionId: 's1', variantId: 'v3' });
    expect(parseFromWebview({ type: 'branchVariant', sessionId: 's1', variantId: 'v3' })).toEqual({ type: 'branchVariant', sessionId: 's1', variantId: 'v3' });
    expect(parseFromWebview({ type: 'evolveFurther', sessionId: 's1', budget: 1e9 })).toEqual({ type: 'evolveFurther', sessionId: 's1' });
    expect(parseFromWebview({ type: 'approvePlan', sessionId: 's1', steps: [{ id: '1', title: '  Tile  ', details: 'use shared memory', x: 1 }] })).toEqual({
      type: 'approvePlan',
      sessionId: 's1',
      steps: [{ id: '1', title: 'Tile', details: 'use shared memory' }],
    });
  });

  it.each([
    [null, 'message: expected an object, got null'],
    [{ type: 'evaluate', code: '1' }, 'message.type: expected one of ready, cancel, approvePlan, showDiff, openSideBySide, rendered, branch, exportChart, proposeVariant, branchVariant, evolveFurther, got "evaluate"'],
    [{ type: 'cancel' }, 'cancel.sessionId: expected a non-empty string of at most 200 characters, got undefined'],
    [{ type: 'cancel', sessionId: 'x'.repeat(201) }, 'cancel.sessionId: expected a non-empty string'],
    [{ type: 'showDiff', sessionId: 's' }, 'showDiff.stepId: expected a non-empty string'],
    [{ type: 'branch', sessionId: 's', stepId: null }, 'branch.stepId: expected a non-empty string'],
    [{ type: 'rendered', sessionId: 's', eventCount: -1 }, 'rendered.eventCount: expected a non-negative integer, got number'],
    [{ type: 'approvePlan', sessionId: 's', steps: [] }, 'approvePlan.steps: expected an array of 1 to 100 steps, got an array'],
    [{ type: 'approvePlan', sessionId: 's', steps: [{ id: '1', title: ' ', details: '' }] }, 'approvePlan.steps[0].title: expected a non-empty title'],
    [{ type: 'approvePlan', sessionId: 's', steps: [{ id: '1', title: 't', details: 5 }] }, 'approvePlan.steps[0].details: expected a string'],
    [{ type: 'proposeVariant', sessionId: 's', variantId: '' }, 'proposeVariant.variantId: expected a non-empty string'],
    [{ type: 'branchVariant', sessionId: 's' }, 'branchVariant.variantId: expected a non-empty string'],
    [{ type: 'exportChart', sessionId: 's', format: 'jpeg', data: '' }, 'exportChart.format: expected one of png, svg, got string'],
    [{ type: 'exportChart', sessionId: 's', format: 'png', data: 'x'.repeat(20_000_001) }, 'exportChart.data: expected a string of at most 20000000 characters'],
  ])('rejects %j', (raw, message) => {
    expect(() => parseFromWebview(raw)).toThrow(ProtocolError);
    expect(() => parseFromWebview(raw)).toThrow(message);
  });
});
