import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { choosePort } from './ports';

describe('choosePort', () => {
  it('uses the preferred port when it is free, another free loopback port when it is taken', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const taken = (holder.address() as net.AddressInfo).port;
    const chosen = await choosePort(taken);
    expect(chosen).not.toBe(taken);
    expect(chosen).toBeGreaterThan(0);
    await new Promise((resolve) => holder.close(resolve));
    expect(await choosePort(taken)).toBe(taken);
  });
});
