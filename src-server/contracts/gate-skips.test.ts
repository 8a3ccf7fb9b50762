import { describe, expect, it } from 'vitest';
import { gatesSkipped, type GraphShape } from './gate-skips';

const review: GraphShape = {
  entry: 'intake',
  nodes: [
    { id: 'intake', kind: 'llm' },
    { id: 'analysis', kind: 'llm' },
    { id: 'gate', kind: 'gate' },
    { id: 'output', kind: 'llm' },
    { id: 'cancelled', kind: 'terminal' },
  ],
  edges: [
    { from: 'intake', to: 'analysis' },
    { from: 'analysis', to: 'gate' },
    { from: 'gate', to: 'output', condition: 'approved' },
    { from: 'gate', to: 'cancelled', condition: 'rejected' },
  ],
};

/** Two gates in a row, and a phase beside the first one that reaches the second on its own. */
const twoGates: GraphShape = {
  entry: 'a',
  nodes: [
    { id: 'a', kind: 'llm' },
    { id: 'g1', kind: 'gate' },
    { id: 'b', kind: 'llm' },
    { id: 'side', kind: 'llm' },
    { id: 'g2', kind: 'gate' },
    { id: 'c', kind: 'llm' },
  ],
  edges: [
    { from: 'a', to: 'g1' },
    { from: 'a', to: 'side' },
    { from: 'g1', to: 'b', condition: 'approved' },
    { from: 'b', to: 'g2' },
    { from: 'side', to: 'g2' },
    { from: 'g2', to: 'c', condition: 'approved' },
  ],
};

describe('gatesSkipped', () => {
  it('names the gate a rule jumps over from before it to after it', () => {
    expect(gatesSkipped(review, 'analysis', 'output')).toEqual(['gate']);
    expect(gatesSkipped(review, 'intake', 'output')).toEqual(['gate']);
  });

  it('sees no skip in a rule that goes back, forward before the gate, to the gate, or ends the run', () => {
    expect(gatesSkipped(review, 'output', 'analysis')).toEqual([]);
    expect(gatesSkipped(review, 'intake', 'analysis')).toEqual([]);
    expect(gatesSkipped(review, 'analysis', 'gate')).toEqual([]);
    expect(gatesSkipped(review, 'analysis', 'cancelled')).toEqual([]);
  });

  it('counts only the gates every way to the target leads through', () => {
    // b is only reached through g1; c only through g2, and g1 can be gone around by way of `side`.
    expect(gatesSkipped(twoGates, 'a', 'b')).toEqual(['g1']);
    expect(gatesSkipped(twoGates, 'a', 'c')).toEqual(['g2']);
    expect(gatesSkipped(twoGates, 'side', 'b')).toEqual(['g1']);
    expect(gatesSkipped(twoGates, 'b', 'c')).toEqual(['g2']);
    expect(gatesSkipped(twoGates, 'a', 'side')).toEqual([]);
  });
});
