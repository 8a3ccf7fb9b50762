import type { Phase } from '@contracts/assets';
import type { GraphDefinition } from '@contracts/runs';
import { MarkerType, Position, type Edge, type Node } from '@vue-flow/core';
import { computed, ref, type Ref } from 'vue';
import { approvalsText } from '../stores/gate-decision';
import { ruleName, type RunView } from '../stores/run-view';
import { gatesSkipped } from '@contracts/gate-skips';
import type { ArcData } from './edge-paths';
import { boxesOf, ranksOf, type Box, type Direction, type Size } from './graph-layout';

/** How the canvas lays the graph out: its direction, and its cards' sizes once they are measured. */
export interface GraphShape {
  direction: Direction;
  sizes: ReadonlyMap<string, Size>;
}

/**
 * What a gate's card says besides its state: its approvals while it waits for several people, else how its last
 * decision went when the state alone does not tell (edited, sent back, expired).
 */
export function gateMark(view: RunView, id: string): string | null {
  if (view.phases[id] === 'gate_waiting')
    return view.pendingGate?.node === id && view.approvals && view.approvals.needed > 1
      ? approvalsText(view.approvals)
      : null;
  const last = view.transcript.findLast((entry) => entry.decision?.gate === id)?.decision;
  switch (last?.kind) {
    case 'edit':
      return 'approved with edits';
    case 'respond':
      return `sent back${last.to ? ` to ${last.to}` : ''}`;
    case 'expire':
      return last.outcome === 'route'
        ? `expired → ${last.to}`
        : last.outcome === 'approve'
          ? 'expired: approved'
          : 'expired: rejected';
    default:
      return null;
  }
}

/**
 * What a model phase says besides its state: the tool call it waits at, or a question one of its calls' servers
 * waits to have answered (the phase is still running then).
 */
export function phaseMark(view: RunView, id: string): string | null {
  if (view.phases[id] === 'tool_waiting') return 'waits for a tool call';
  return view.toolCalls[id]?.some((call) => call.questions.some((q) => q.state === 'asked'))
    ? 'waits for an answer'
    : null;
}

/** The tools a phase may use, in words, for its badge: its tool patterns, or the tool it publishes with; null: none. */
export function phaseTools(phase: Pick<Phase, 'tools' | 'publish'>): string | null {
  if (phase.publish) return `publishes with ${phase.publish.tool}`;
  if (phase.tools?.tools.length) return `uses tools: ${phase.tools.tools.join(', ')}`;
  return null;
}

/**
 * Where a rejection ended the run on screen: the phase the rejected gate's `rejected` edge leads to; null when no gate
 * of the run was rejected.
 */
export function rejectionEnd(graph: GraphDefinition, run: RunView): string | null {
  const gate = run.trail.findLast((node) => run.phases[node] === 'gate_rejected');
  return gate ? (graph.edges.find((e) => e.from === gate && e.condition === 'rejected')?.to ?? null) : null;
}

/**
 * The steps the run on screen took, `from->to` → the class its edge is drawn with: `taken` from phase to phase along
 * its trail, like a finished run's path; a rejected run's whole path is `taken rejected`, in its own colour, from its
 * first phase to where the rejection ends it.
 */
export function takenSteps(graph: GraphDefinition, run: RunView): Map<string, string> {
  const end = rejectionEnd(graph, run);
  const taken = end ? 'taken rejected' : 'taken';
  const steps = new Map<string, string>();
  run.trail.forEach((node, i) => {
    const next = run.trail[i + 1];
    if (next) steps.set(`${node}->${next}`, taken);
  });
  const gate = run.trail.findLast((node) => run.phases[node] === 'gate_rejected');
  if (gate && end) steps.set(`${gate}->${end}`, taken);
  return steps;
}

/** Maps the domain graph and the run on screen to Vue Flow's nodes and edges. */
export function useGraphElements(
  graph: Ref<GraphDefinition | null>,
  view: Ref<RunView>,
  shape: Ref<GraphShape> = ref({ direction: 'right', sizes: new Map() }),
) {
  // Where the cards go, and each phase's rank: read again only when the graph or its shape changes, not with the run.
  const boxes = computed(() =>
    graph.value ? boxesOf(graph.value, shape.value.direction, shape.value.sizes) : new Map<string, Box>(),
  );
  const rank = computed(
    () =>
      new Map(
        (graph.value ? ranksOf(graph.value) : []).flatMap((ids, i) => ids.map((id): [string, number] => [id, i])),
      ),
  );

  const nodes = computed<Node[]>(() => {
    if (!graph.value) return [];
    const ended = rejectionEnd(graph.value, view.value);
    const down = shape.value.direction === 'down';
    return graph.value.phases.map((phase) => ({
      id: phase.id,
      type: 'phase',
      position: { x: boxes.value.get(phase.id)!.x, y: boxes.value.get(phase.id)!.y },
      // Vue Flow measures a card's handles again when these change (its handles sit on these sides).
      sourcePosition: down ? Position.Bottom : Position.Right,
      targetPosition: down ? Position.Top : Position.Left,
      data: {
        direction: shape.value.direction,
        label: phase.name,
        kind: phase.kind,
        state: view.value.phases[phase.id] ?? 'idle',
        flash: view.value.flash === phase.id,
        configured: Boolean(phase.overrides),
        mark:
          phase.kind === 'gate'
            ? gateMark(view.value, phase.id)
            : phase.id === ended
              ? 'the run ended here: rejected'
              : phaseMark(view.value, phase.id),
        /** The end of a rejected run's path, drawn in the path's colour. */
        rejectedEnd: phase.id === ended,
        tools: phaseTools(phase),
        waitingCall:
          view.value.pendingGate?.node === phase.id ? (view.value.pendingGate.tool_call?.tool ?? null) : null,
      },
    }));
  });

  const edges = computed<Edge[]>(() => {
    const definition = graph.value;
    if (!definition) return [];
    const { direction } = shape.value;
    const run = view.value;
    const taken = takenSteps(definition, run);
    const matched = new Set(run.routes.map((r) => `${r.from}->${r.to}`));
    const lanes: Record<ArcData['bend'], number> = { over: 0, under: 0 };
    /**
     * How far the cards an arc goes around reach from its source's middle, on the side it bends to: the ranks between
     * a forward jump's ends, or every rank from a step back's target to its source.
     */
    const clearance = (from: string, to: string, bend: ArcData['bend']): number => {
      const [a, b] = [rank.value.get(from)!, rank.value.get(to)!];
      const around = definition.phases.filter(({ id }) => {
        const r = rank.value.get(id)!;
        return bend === 'over' ? r > a && r < b : r >= b && r <= a;
      });
      const source = boxes.value.get(from)!;
      const middle = direction === 'right' ? source.y + source.height / 2 : source.x + source.width / 2;
      const reach = around.map(({ id }) => {
        const box = boxes.value.get(id)!;
        const [start, end] = direction === 'right' ? [box.y, box.y + box.height] : [box.x, box.x + box.width];
        return bend === 'over' ? middle - start : end - middle;
      });
      return Math.max(0, ...reach);
    };
    /**
     * Where an arc leaves its source's card and enters its target's: the middles of their sides the flow crosses, from
     * the layout itself. (Not from the handles Vue Flow measured: those lag a turn of the layout by a frame or more,
     * and an arc drawn from where they were runs through the cards it should go around.)
     */
    const ends = (from: string, to: string): Pick<ArcData, 'start' | 'end'> => {
      const [a, b] = [boxes.value.get(from)!, boxes.value.get(to)!];
      return direction === 'right'
        ? { start: { x: a.x + a.width, y: a.y + a.height / 2 }, end: { x: b.x, y: b.y + b.height / 2 } }
        : { start: { x: a.x + a.width / 2, y: a.y + a.height }, end: { x: b.x + b.width / 2, y: b.y } };
    };
    const arcData = (from: string, to: string, bend: ArcData['bend']): ArcData => ({
      bend,
      lane: lanes[bend]++,
      clearance: clearance(from, to, bend),
      ...ends(from, to),
    });
    /** Over the cards between a forward jump's ends, under them going back; next door: a plain curve. */
    const arc = (from: string, to: string): Pick<Edge, 'type' | 'data'> => {
      const a = rank.value.get(from)!;
      const b = rank.value.get(to)!;
      const bend = b <= a ? 'under' : b - a > 1 ? 'over' : null;
      return bend ? { type: 'arc', data: arcData(from, to, bend) } : {};
    };
    const classes = (...names: (string | false)[]) => names.filter(Boolean).join(' ');
    const takenClass = (key: string) => taken.get(key) ?? false;

    const base: Edge[] = definition.edges.map((e) => ({
      id: `${e.from}->${e.to}`,
      source: e.from,
      target: e.to,
      label: e.condition,
      class: classes(takenClass(`${e.from}->${e.to}`)),
      markerEnd: MarkerType.ArrowClosed,
      animated: run.phases[e.from] === 'active',
    }));
    const drawn = new Set(base.map((b) => b.id));
    const gateShape = { entry: definition.entry, nodes: definition.phases, edges: definition.edges };

    // The routing rules in force on each phase (its saved overrides, else the asset's own): each jump the graph's
    // edges do not draw gets its own edge, and one that skips a gate goes around it rather than behind it.
    const rules: Edge[] = definition.phases.flatMap((phase) => {
      const inForce = phase.overrides?.routing_overrides.length ? phase.overrides.routing_overrides : phase.routes;
      return inForce.flatMap((rule) => {
        const key = `${phase.id}->${rule.target}`;
        if (rule.target === phase.id || drawn.has(key) || !rank.value.has(rule.target)) return [];
        drawn.add(key);
        const skips = gatesSkipped(gateShape, phase.id, rule.target);
        return [
          {
            id: `rule:${key}`,
            source: phase.id,
            target: rule.target,
            label: skips.length ? `${ruleName(rule)} · skips ${skips.join(', ')}` : ruleName(rule),
            ariaLabel:
              `rule '${ruleName(rule)}' from ${phase.id} to ${rule.target}` +
              (skips.length ? `, skipping the gate ${skips.join(', ')}` : ''),
            class: classes(
              'rule-edge',
              skips.length > 0 && 'skips-gate',
              matched.has(key) && 'route-edge',
              takenClass(key),
            ),
            markerEnd: MarkerType.ArrowClosed,
            animated: matched.has(key),
            ...arc(phase.id, rule.target),
          },
        ];
      });
    });
    // A route the run took that no rule in force draws (a gate's expiry, or a rule changed since).
    const routed: Edge[] = [...matched]
      .filter((key) => !drawn.has(key))
      .map((key) => {
        drawn.add(key);
        const [source, target] = key.split('->') as [string, string];
        return {
          id: `route:${key}`,
          source,
          target,
          label: 'rule',
          class: classes('route-edge', takenClass(key)),
          markerEnd: MarkerType.ArrowClosed,
          animated: true,
          ...arc(source, target),
        };
      });
    // A gate that sent the flow back to an earlier phase (respond): an edge back, drawn under the forward ones so the
    // two do not lie on top of each other, live while that phase works again.
    const returned: Edge[] = [...new Set(run.returns.map((r) => `${r.from}->${r.to}`))].map((key) => {
      const [source, target] = key.split('->') as [string, string];
      return {
        id: `return:${key}`,
        source,
        target,
        type: 'arc',
        data: arcData(source, target, 'under'),
        label: 'sent back',
        class: classes('return-edge', takenClass(key)),
        markerEnd: MarkerType.ArrowClosed,
        animated: run.phases[target] === 'active',
      };
    });
    return [...base, ...rules, ...routed, ...returned];
  });

  return { nodes, edges };
}
