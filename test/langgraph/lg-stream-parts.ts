/** What the LangGraph tests read from the SDK: its stream's parts, and a message as the values carry it. */

export interface LgMessage {
  type: string;
  id: string;
  content: string;
  name?: string;
}

/** One part of an SDK stream: its event (mode), its data, and the id it can be resumed after. */
export type Part = { event: string; data: unknown; id?: string };

/** Reads an SDK stream to its end. */
export async function collect(stream: AsyncIterable<Part>): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}
