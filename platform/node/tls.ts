/**
 * TLS for the node's three ports (HTTP, gRPC, metrics) from HEARTH_TLS_CERT / HEARTH_TLS_KEY, and
 * mutual TLS with HEARTH_TLS_CLIENT_CA: a client must present a certificate that CA signed, or the
 * handshake fails (plaintext fails it too). Certificates are reloaded without a restart when their
 * files change (cert-manager renews them in place): the HTTP servers get a new secure context, and
 * grpc-js' own file watcher gives the gRPC server new credentials. A renewal that cannot be read
 * (a half-written file) is logged and the previous certificate kept.
 */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { Server as HttpsServer, ServerOptions } from 'node:https';

import * as grpc from '@grpc/grpc-js';

import { InvalidInputError } from '../../sdk/errors.js';
import type { TlsFiles } from '../config/index.js';

const read = (file: string, what: string): Buffer => {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new InvalidInputError(`${what}: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`);
  }
};

/** The HTTPS servers' options, read from the files now. */
export function tlsServerOptions(tls: TlsFiles): ServerOptions {
  const options: ServerOptions = {
    cert: read(tls.certFile, 'HEARTH_TLS_CERT'),
    key: read(tls.keyFile, 'HEARTH_TLS_KEY'),
    minVersion: 'TLSv1.2',
  };
  if (tls.clientCaFile) {
    options.ca = read(tls.clientCaFile, 'HEARTH_TLS_CLIENT_CA');
    options.requestCert = true;
    options.rejectUnauthorized = true;
  }
  return options;
}

/**
 * Watches the files and gives `servers` a new secure context when one changes. Returns the stop.
 * `onError` hears a renewal that could not be used.
 */
export function reloadOnChange(tls: TlsFiles, servers: HttpsServer[], onError: (error: Error) => void): () => void {
  const files = [tls.certFile, tls.keyFile, ...(tls.clientCaFile ? [tls.clientCaFile] : [])];
  const reload = () => {
    try {
      const options = tlsServerOptions(tls);
      for (const server of servers) server.setSecureContext(options);
    } catch (error) {
      onError(error as Error);
    }
  };
  for (const file of files) watchFile(file, { interval: tls.reloadMs ?? 2000, persistent: false }, reload);
  return () => {
    for (const file of files) unwatchFile(file, reload);
  };
}

/** The gRPC server's credentials: insecure without TLS files, else TLS (and mutual TLS) reloaded from them. */
export function grpcServerCredentials(tls: TlsFiles | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  // Read once now, so a bad file stops the node at start with a message naming it.
  tlsServerOptions(tls);
  const refreshIntervalMs = tls.reloadMs ?? 2000;
  const identity = new grpc.experimental.FileWatcherCertificateProvider({
    certificateFile: tls.certFile,
    privateKeyFile: tls.keyFile,
    refreshIntervalMs,
  });
  const ca = tls.clientCaFile
    ? new grpc.experimental.FileWatcherCertificateProvider({ caCertificateFile: tls.clientCaFile, refreshIntervalMs })
    : null;
  // grpc-js names the first argument the CA provider in its types; its code takes the identity first.
  return grpc.experimental.createCertificateProviderServerCredentials(identity, ca, ca !== null);
}
