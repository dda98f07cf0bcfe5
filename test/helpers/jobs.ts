/** For the async-invocation tests: a job as the API shows it, and a webhook receiver on loopback. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface JobView {
  id: string;
  status: string;
  attempts: number;
  function?: string;
  createdAt?: string;
  result?: { json?: { outputs: { y: number[][] } }; contentType: string };
  error?: { code: string };
  webhook?: string;
  deliveries?: { ok: boolean; status?: number; error?: string }[];
}

/** A webhook receiver on loopback that fails the first `failFirst` deliveries with 500. */
export async function receiver(failFirst = 0): Promise<{
  url: string;
  received: { headers: Record<string, string>; body: string }[];
  tries: number;
  close(): Promise<void>;
}> {
  const state = { received: [] as { headers: Record<string, string>; body: string }[], tries: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      state.tries++;
      if (state.tries <= failFirst) return res.writeHead(500).end();
      state.received.push({ headers: req.headers as Record<string, string>, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: state.received,
    get tries() {
      return state.tries;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
