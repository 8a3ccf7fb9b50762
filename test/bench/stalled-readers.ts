/**
 * What readers that never read cost the server: 20 of them attached to a long run at the stand-in's full speed, its
 * resident memory while the run streams, beside the same run followed by one reader that reads.
 */
import net from 'node:net';
import type { ModelFake } from '../fixtures/fake-models';
import type { ServerProcess } from '../helpers/process';
import { readEvents } from '../helpers/sse';
import type { BenchRow } from './bench-table';
import { rssMiB } from './process-usage';

const READERS = 20;
const TOKENS_PER_PHASE = 20_000;

/** The server's resident memory above where it began, at its highest while `work` runs (sampled every 20 ms). */
async function peakGrowth(pid: number, work: () => Promise<void>): Promise<number> {
  const start = await rssMiB(pid);
  let peak = start;
  const sampler = setInterval(() => void rssMiB(pid).then((v) => (peak = Math.max(peak, v))), 20);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return peak - start;
}

/** A raw connection that asks for a run's stream and then reads nothing. */
function stalledReader(url: URL, runId: string): net.Socket {
  const socket = net.connect(Number(url.port), url.hostname);
  socket.on('error', () => undefined);
  socket.pause();
  socket.write(`GET /runs/${runId}/stream HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
  return socket;
}

export async function stalledReadersRow(server: ServerProcess, model: ModelFake): Promise<BenchRow> {
  const pid = server.child.pid!;
  // Tokens of about 200 bytes: a run's stream (about 15 MiB) is larger than what the kernel's socket buffers take in
  // for a reader, so what a stalled reader costs shows in the server's memory.
  model.reply(Array.from({ length: TOKENS_PER_PHASE }, (_, i) => `${i} ${'x'.repeat(200)} `));
  const start = () => server.request('/graphs/summary/run', { method: 'POST', json: { message: 'long' } });
  let streamBytes = 0;
  const followed = async () => {
    const events = await readEvents(await start());
    streamBytes = events.reduce((sum, e) => sum + JSON.stringify(e.data).length + 30, 0);
  };
  await followed(); // the first long run grows the heap to what such a run needs: not counted
  const alone = await peakGrowth(pid, followed);

  const dropsBefore = server.output().split('does not read its stream').length;
  const sockets: net.Socket[] = [];
  const withStalled = await peakGrowth(pid, async () => {
    await readEvents(await start(), (event) => {
      if (event.data.type === 'run_start') {
        for (let i = 0; i < READERS; i++) sockets.push(stalledReader(new URL(server.url), event.data.run_id));
      }
    });
  });
  // Readers that attach as the run starts catch up from the store at their own pace (at most 1 MiB ahead of them), and
  // are dropped once they have read nothing for 15 s.
  const endedAt = performance.now();
  const dropped = () => server.output().split('does not read its stream').length - dropsBefore;
  while (dropped() < READERS && performance.now() - endedAt < 25_000) await new Promise((r) => setTimeout(r, 200));
  const droppedAfterS = (performance.now() - endedAt) / 1000;
  for (const socket of sockets) socket.destroy();
  const mib = (v: number) => `${v.toFixed(0)} MiB`;
  return {
    benchmark: `Memory: ${READERS} readers that never read a run of 3 × ${TOKENS_PER_PHASE.toLocaleString('en')} tokens of 200 bytes at full stand-in speed (server resident memory above its start, at its peak)`,
    service: `+${mib(withStalled)} with the ${READERS} stalled readers`,
    baseline: `+${mib(alone)} for the run followed by one reader that reads (${(streamBytes / 2 ** 20).toFixed(1)} MiB of events)`,
    ratio: `${dropped()} of ${READERS} dropped ${droppedAfterS.toFixed(0)} s after the run ended`,
    target: 'measured; each bounded (64 MiB behind, or 15 s without reading)',
    met: '',
  };
}
