/**
 * The node's three listening servers: metrics (8002, behind its key), HTTP (8000: the front's
 * handler, TLS reloaded when renewed) and gRPC (8001). Each resolves with the port it got (0 picks a
 * free one).
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { ServerOptions as HttpsOptions, Server as HttpsServer } from 'node:https';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

import { findKey } from '../caller/index.js';
import type { Config } from '../config/index.js';
import { DEFAULT_TENANT } from '../config/index.js';
import type { FunctionService } from '../functions/index.js';
import { bindGrpc, createGrpcServer } from '../grpc/index.js';
import { browserRefusal } from '../http/index.js';
import type { Kserve } from '../kserve/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { grpcServerCredentials, reloadOnChange } from './tls.js';

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    if (server.listening) return resolve((server.address() as AddressInfo).port);
    server.once('listening', () => resolve((server.address() as AddressInfo).port));
    server.once('error', reject);
  });
}

/** Serves /metrics to Prometheus: with the metrics key when one is set, never to a browser's page. */
export function listenMetrics(
  config: Config,
  metrics: Metrics,
  tlsOptions: HttpsOptions | undefined,
): Promise<{ server: Server; port: number }> {
  return metrics.listen(
    config.host,
    config.metricsPort,
    (req) => {
      const browser = config.loopbackGuard ? browserRefusal(req.headers) : undefined;
      if (browser) return { status: 403, error: browser, code: 'PERMISSION_DENIED' };
      if (config.metricsKey === undefined) return undefined;
      const bearer = req.headers.authorization;
      const given = bearer?.startsWith('Bearer ') ? bearer.slice(7) : '';
      return findKey([{ key: config.metricsKey, scope: 'invoke', tenant: DEFAULT_TENANT }], given)
        ? undefined
        : {
            status: 401,
            error: 'send the metrics key: Authorization: Bearer <HEARTH_METRICS_KEY>',
            code: 'UNAUTHENTICATED',
          };
    },
    tlsOptions,
  );
}

export interface HttpServer {
  server: Server;
  port: number;
  /** Stops watching the TLS files (none without TLS). */
  stopReload: (() => void) | undefined;
}

/** The HTTP (or HTTPS) server; the metrics server's certificate is reloaded with its own. */
export async function listenHttp(
  config: Config,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  tlsOptions: HttpsOptions | undefined,
  metricsServer: Server,
  log: Logger,
): Promise<HttpServer> {
  const server: Server = tlsOptions ? createHttpsServer(tlsOptions, handle) : createServer(handle);
  // Renewed certificate files are picked up without a restart.
  const stopReload = config.tls
    ? reloadOnChange(config.tls, [server as HttpsServer, metricsServer as HttpsServer], (error) =>
        log.warn({ reason: error.message }, 'renewed TLS files could not be used; the previous certificate stays'),
      )
    : undefined;
  // Idle kept-alive connections stay open 65 s (as load balancers expect: longer than their own
  // idle timeout, so the node never closes a socket a client is about to reuse).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.listen(config.httpPort, config.host);
  return { server, port: await listen(server), stopReload };
}

/** The gRPC server (KServe's GRPCInferenceService), with TLS from the same files as HTTP. */
export async function listenGrpc(
  config: Config,
  service: FunctionService,
  kserve: Kserve,
  log: Logger,
): Promise<{ server: ReturnType<typeof createGrpcServer>; port: number }> {
  const server = createGrpcServer({
    service,
    kserve,
    apiKeys: config.apiKeys,
    maxMessageBytes: config.maxBodyBytes,
    log,
  });
  const port = await bindGrpc(server, config.host, config.grpcPort, grpcServerCredentials(config.tls));
  return { server, port };
}
