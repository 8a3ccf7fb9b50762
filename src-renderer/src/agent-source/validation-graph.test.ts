import { describe, expect, it } from 'vitest';
import { graphOfValidation } from './validation-graph';

const layout = {
  name: 'default-agent',
  entry: 'intake',
  nodes: [
    { id: 'intake', kind: 'llm' as const },
    { id: 'gate', kind: 'gate' as const },
    { id: 'cancelled', kind: 'terminal' as const },
  ],
  edges: [
    { from: 'intake', to: 'gate' },
    { from: 'gate', to: 'cancelled', condition: 'rejected' },
  ],
};
const phases = [
  { id: 'intake', name: 'Read the change', kind: 'llm' as const },
  { id: 'gate', name: 'Approve', kind: 'gate' as const },
  { id: 'cancelled', name: 'cancelled', kind: 'terminal' as const },
];

describe('graphOfValidation', () => {
  it('draws the phases as compiled on the layout’s edges', () => {
    const graph = graphOfValidation({
      valid: true,
      problems: [],
      name: 'review-copy',
      kind: 'agent',
      graph: { layout, phases },
    });
    expect(graph).toMatchObject({ name: 'review-copy', kind: 'agent', entry: 'intake', edges: layout.edges });
    expect(graph!.phases.map((p) => [p.id, p.name, p.kind, p.overrides])).toEqual([
      ['intake', 'Read the change', 'llm', null],
      ['gate', 'Approve', 'gate', null],
      ['cancelled', 'cancelled', 'terminal', null],
    ]);
  });

  it('is null for a source with problems', () => {
    expect(
      graphOfValidation({
        valid: false,
        problems: [{ line: 2, field: 'name', message: 'is required' }],
        name: null,
        kind: null,
        graph: null,
      }),
    ).toBeNull();
  });
});
