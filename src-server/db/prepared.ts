/**
 * A statement the server sends for every run (its start, its events and checkpoints, its queue ticket, its phases'
 * configuration) as a named prepared statement: PostgreSQL parses it once per connection, and after a few executions
 * keeps a generic plan, rather than parsing and planning it again for each call. Measured on a short run, parsing and
 * planning these statements took as long as executing them (docs/performance.md).
 *
 * Only for texts that hold no values: every distinct text is a statement that each connection keeps for its life.
 * The name comes from the text, so the same text has the same name on every connection of the process, and two texts
 * never share one (node-postgres refuses a name sent again with another text).
 */
const names = new Map<string, string>();

export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

export function prepared(text: string): PreparedStatement {
  let name = names.get(text);
  if (name === undefined) {
    name = `svc_${names.size + 1}`;
    names.set(text, name);
  }
  return { name, text };
}
