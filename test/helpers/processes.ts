import { readdirSync, readFileSync } from 'node:fs';

/**
 * The pids of this machine's processes whose command line holds `text`, read from /proc as ps does: how a test finds
 * a stdio MCP server, whose own pid (1, in a PID namespace of its own) means nothing here.
 */
export function processesWith(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}
