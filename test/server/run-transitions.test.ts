import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_TRANSITIONS } from '../../src-server/contracts/run-transitions';

/** docs/run-lifecycle.md's table of a run's status changes is the one the code has (contracts/run-transitions.ts). */
const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/run-lifecycle.md'), 'utf8');

function documented(): Record<string, { from: string[] | null; to: string; when: string }> {
  const table = /<!-- run-transitions -->([\s\S]*?)<!-- \/run-transitions -->/.exec(doc)?.[1] ?? '';
  const rows = table
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  const name = (cell: string) => cell.replaceAll('`', '');
  return Object.fromEntries(
    rows.map(([transition, from, to, when]) => [
      name(transition!),
      {
        from: from === '(new)' ? null : from!.split(',').map((s) => name(s.trim())),
        to: name(to!),
        when: when!,
      },
    ]),
  );
}

describe("the run's status changes", () => {
  it('are documented exactly as the code makes them', () => {
    const code = Object.fromEntries(
      Object.entries(RUN_TRANSITIONS).map(([name, t]) => [
        name,
        { from: t.from ? [...t.from] : null, to: t.to, when: t.when },
      ]),
    );
    expect(documented()).toEqual(code);
  });
});
