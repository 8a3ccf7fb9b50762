import { describe, expect, it } from 'vitest';
import { applyEvent, emptyView } from '../stores/run-view';
import { gateMark } from './use-graph-elements';

describe("a gate's mark on the canvas", () => {
  it('counts approvals while it waits for several, then says how its last decision went', () => {
    const view = emptyView();
    applyEvent(view, { type: 'gate_waiting', node: 'gate', question: 'q', required_context: [], context: {} }, 1);
    expect(gateMark(view, 'gate')).toBeNull();
    view.approvals = { needed: 2, given: 1, by: [{ id: 'u', name: 'Ada', at: '2026-01-01T12:00:00Z' }] };
    expect(gateMark(view, 'gate')).toBe('1 of 2 approvals');
    applyEvent(view, { type: 'gate_responded', node: 'gate', to: 'analysis', response: 'r', reason: null }, 2);
    expect(gateMark(view, 'gate')).toBe('sent back to analysis');
    applyEvent(view, { type: 'gate_waiting', node: 'gate', question: 'q', required_context: [], context: {} }, 3);
    expect(gateMark(view, 'gate')).toBeNull();
    applyEvent(view, { type: 'gate_edited', node: 'gate', reason: null, edits: { a: 'b' } }, 4);
    expect(gateMark(view, 'gate')).toBe('approved with edits');
    applyEvent(view, { type: 'gate_expired', node: 'gate', outcome: 'reject', to: null }, 5);
    expect(gateMark(view, 'gate')).toBe('expired: rejected');
    expect(gateMark(view, 'analysis')).toBeNull();
  });
});
