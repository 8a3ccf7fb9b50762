import { createHash } from 'node:crypto';
import { stopId } from '../../contracts/stops';

/** The namespace LangGraph's own server derives the id of a graph's default assistant from its graph id with. */
const ASSISTANT_NAMESPACE = '6ba7b821-9dad-11d1-80b4-00c04fd430c8';

/** RFC 4122 version 5: a name's id within a namespace, the same everywhere. */
function uuid5(name: string, namespace: string): string {
  const bytes = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An agent's or a command's assistant id: what LangGraph's own server gives the default assistant of a graph. */
export const assistantIdOf = (graphId: string): string => uuid5(graphId, ASSISTANT_NAMESPACE);

/** The id of a run's human message: one per run. */
export const humanMessageId = (runId: string): string => `${runId}:human`;

/** The id of a phase's message in a run: one per phase, its last answer (a phase sent back keeps its id). */
export const phaseMessageId = (runId: string, node: string): string => `${runId}:${node}`;

/** A stop's interrupt id is its stop id (contracts/stops.ts): the run and the event it stopped with. */
export const interruptId = stopId;
