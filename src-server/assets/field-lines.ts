import { isAlias, isMap, isNode, isScalar, isSeq, type Document, type LineCounter } from 'yaml';
import type { FieldPath } from './asset-error';

/**
 * The line a field is written on in a parsed YAML (or JSON) text: its key's line, a list item's own line, or, for a
 * field that is not written (a missing required one), the line of the nearest enclosing field that is.
 * `firstLine` is the file's line the text starts at (2 for a frontmatter, below its `---`).
 */
export function fieldLines(doc: Document, lineCounter: LineCounter, firstLine: number): (field: FieldPath) => number {
  const startOf = (node: unknown) =>
    isNode(node) && node.range ? lineCounter.linePos(node.range[0]).line + firstLine - 1 : undefined;
  return (field) => {
    let node: unknown = doc.contents;
    let line = startOf(node) ?? firstLine;
    for (const segment of field) {
      if (isAlias(node)) node = node.resolve(doc);
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
        if (!pair) break;
        line = startOf(pair.key) ?? line;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number' && segment < node.items.length) {
        node = node.items[segment];
        line = startOf(node) ?? line;
      } else {
        break;
      }
    }
    return line;
  };
}
